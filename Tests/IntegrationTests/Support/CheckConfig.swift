import Foundation
import TestSupport
import Testing

extension Scenario {
    /// Runs `estuary [arguments] [--config FILE with json] --check-config` and checks that it
    /// fails with a short message (at most 3 lines) that says `expected`, and names the file
    /// when `namesFile`.
    func checkConfigFails(
        _ arguments: [String] = [], json: String? = nil, saying expected: String, namesFile: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        var arguments = arguments
        var file: URL?
        if let json {
            let written = self.file("config-\(UUID().uuidString.prefix(6)).json")
            try Data(json.utf8).write(to: written)
            arguments += ["--config", written.path]
            file = written
        }
        let run = try self.launch(executable: try TestEnvironment.nodeBinary(), arguments + ["--check-config"], name: "check-config")
        let ended = await run.waitForExit(timeout: .seconds(10))
        let output = run.stderrText + run.stdoutText
        let short = output.split(separator: "\n").filter { !$0.isEmpty }.count <= 3
        let named = !namesFile || file.map { output.contains($0.path) } ?? false
        self.check(
            ended != nil && ended != .exited(0) && output.contains(expected) && short && named,
            "\(json ?? arguments.joined(separator: " ")): expected a short failure saying \"\(expected)\"\(namesFile ? " and the file" : ""), got \(ended.map(\.description) ?? "no exit"):\n\(output)",
            sourceLocation: sourceLocation
        )
    }

    /// Runs `estuary … --check-config` with `json` (or `yaml`) as the file and checks that it passes.
    func checkConfigPasses(json: String? = nil, yaml: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let file = self.file("config-\(UUID().uuidString.prefix(6)).\(yaml != nil ? "yaml" : "json")")
        try Data((yaml ?? json ?? "").utf8).write(to: file)
        let run = try self.launch(executable: try TestEnvironment.nodeBinary(), ["--config", file.path, "--check-config"], name: "check-config")
        let ended = await run.waitForExit(timeout: .seconds(10))
        self.check(ended == .exited(0), "\(yaml ?? json ?? ""): --check-config ended with \(ended.map(\.description) ?? "no exit"): \(run.stderrText)", sourceLocation: sourceLocation)
    }
}
