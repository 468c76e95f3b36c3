import Foundation
import Testing

/// scripts/cluster-local.sh: the same commands as the compose file, loopback-substituted.
@Suite("cluster-local.sh")
struct LocalClusterTests {
    static let script = Deployment.file("scripts/cluster-local.sh")

    /// "service<TAB>argument" lines, grouped by service in order.
    static func parseLines(_ output: String) -> [(service: String, arguments: [String])] {
        var result: [(service: String, arguments: [String])] = []
        for line in output.split(separator: "\n", omittingEmptySubsequences: true) {
            let parts = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            let service = String(parts[0]), argument = String(parts[1])
            if result.last?.service == service {
                result[result.count - 1].arguments.append(argument)
            } else {
                result.append((service, [argument]))
            }
        }
        return result
    }

    @Test("the script's parser reads the same commands as Yams")
    func scriptParsesComposeLikeYams() async throws {
        let compose = try ComposeFile.load()
        let run = try await runProcess(Self.script, ["--print-compose"], timeout: .seconds(20))
        #expect(run.status == 0, "\(run.summary)")
        let parsed = Self.parseLines(run.output)
        #expect(parsed.map(\.service) == compose.services.map(\.name), "services, in compose order")
        for service in compose.services {
            let fromScript = parsed.first { $0.service == service.name }?.arguments
            #expect(fromScript == service.command, "\(service.name): script \(fromScript ?? []) vs compose \(service.command ?? [])")
        }
    }

    @Test("the local commands keep the compose arguments, substitute loopback, and pass --check-config")
    func localCommandsAreValid() async throws {
        let compose = try ComposeFile.load()
        let directory = "/tmp/estuary-deploy-print"
        let natsToken = try #require(ComposeFile.testVariables["ESTUARY_NATS_TOKEN"])
        let run = try await runProcess(
            Self.script, ["--print-args"],
            environment: ComposeFile.testVariables.merging(["CLUSTER_DIR": directory, "CLUSTER_PORT_SHIFT": "20000"]) { _, new in new },
            timeout: .seconds(20)
        )
        #expect(run.status == 0, "\(run.summary)")
        let local = Self.parseLines(run.output)
        #expect(local.map(\.service) == compose.services.map(\.name))

        var httpPorts: [String: String] = [:]
        for (index, entry) in local.enumerated() where !entry.service.hasPrefix("nats") {
            let service = try #require(compose[entry.service])
            let composeArguments = try #require(service.command)
            let arguments = Array(entry.arguments.dropFirst())  // argv[0] is the node binary
            func value(_ flag: String) -> String? {
                arguments.firstIndex(of: flag).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
            }
            // Same flags as compose, in the same order, then the appended loopback ones.
            let composeFlags = composeArguments.filter { $0.hasPrefix("--") }
            #expect(Array(arguments.filter { $0.hasPrefix("--") }.prefix(composeFlags.count)) == composeFlags, "\(entry.service)")
            #expect(value("--role") == service.argument("--role"))
            #expect(value("--node-id") == service.argument("--node-id"))
            if entry.service == "edge" {
                // Its upstreams are the relays' HTTP ports, mapped as their own services'.
                let relays = ["relay-1", "relay-2"].map { name in local.firstIndex { $0.service == name }.map { 8080 + 20000 + 100 * $0 } ?? 0 }
                #expect(value("--upstream") == relays.map { "http://127.0.0.1:\($0)" }.joined(separator: ","), "edge: --upstream")
            }
            // The three nats-servers, each on 4222 + the shift + 100 × its place in the file.
            let natsURLs = [24222, 24322, 24422].map { "nats://\(natsToken)@127.0.0.1:\($0)" }.joined(separator: ",")
            #expect(value("--nats") == natsURLs, "\(entry.service): the token, nats-N → 127.0.0.1, ports 4222 + 20000 + 100 × N")
            #expect(value("--advertise-host") == "127.0.0.1")
            #expect(value("--bind") == "127.0.0.1")
            #expect(value("--data-dir") == "\(directory)/\(entry.service)")
            let containerHTTP = Int(service.argument("--http-port") ?? "8080")!
            #expect(value("--http-port") == String(containerHTTP + 20000 + 100 * index), "\(entry.service): port map")
            let containerAdmin = Int(service.argument("--admin-port") ?? "8090")!
            #expect(value("--admin-port") == String(containerAdmin + 20000 + 100 * index), "\(entry.service): admin port map")
            #expect(service.argument("--admin-bind") == nil || value("--admin-bind") == "127.0.0.1", "\(entry.service): the admin plane stays on loopback")
            if let database = service.argument("--database") {
                #expect(value("--database") == directory + "/" + entry.service + database.dropFirst("/data".count))
            }
            #expect(!arguments.contains { $0.contains("@nats") || $0.contains("${") || $0.hasPrefix("/data") }, "\(entry.service): \(arguments)")
            httpPorts[entry.service] = value("--http-port")

            let check = try await runProcess(
                try Deployment.nodeBinary(), arguments + ["--check-config"],
                environment: try service.interpolatedEnvironment(ComposeFile.testVariables), timeout: .seconds(30)
            )
            #expect(check.status == 0, "\(entry.service): \(check.summary)")
            #expect(check.output.contains("ok: role \(service.argument("--role") ?? "?")"), "\(entry.service): \(check.output)")
        }
        #expect(Set(httpPorts.values).count == httpPorts.count, "every local service has its own HTTP port: \(httpPorts)")
    }

    @Test("without secrets, --print-args shows placeholders and creates nothing")
    func printWithoutSecretsCreatesNothing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("estuary-deploy-\(UUID().uuidString.prefix(8))")
        // Empty counts as unset, for the script as for compose's `:?`.
        let run = try await runProcess(
            Self.script, ["--print-args"],
            environment: ["CLUSTER_DIR": directory.path, "CLUSTER_PORT_SHIFT": "20000", "ESTUARY_ADMIN_TOKEN": "", "ESTUARY_NATS_TOKEN": ""],
            timeout: .seconds(20)
        )
        #expect(run.status == 0, "\(run.summary)")
        let local = Self.parseLines(run.output)
        // Every service on the bus.
        for entry in local where !entry.service.hasPrefix("nats") {
            #expect(entry.arguments.contains([24222, 24322, 24422].map { "nats://<ESTUARY_NATS_TOKEN>@127.0.0.1:\($0)" }.joined(separator: ",")), "\(entry.service): \(entry.arguments)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path), "--print-args created \(directory.path)")
    }

    @Test("the script refuses a NATS token that cannot go into a nats:// URL")
    func scriptRefusesAnUnusableNATSToken() async throws {
        let run = try await runProcess(
            Self.script, ["--print-args"],
            environment: ["CLUSTER_DIR": "/tmp/estuary-deploy-print", "ESTUARY_NATS_TOKEN": "user:pass@host"],
            timeout: .seconds(20)
        )
        #expect(run.status != 0, "\(run.summary)")
        #expect(run.output.contains("ESTUARY_NATS_TOKEN must be"), "\(run.summary)")
    }

    @Test("cluster-local.sh --check starts the whole topology and sees every /readyz", .timeLimit(.minutes(2)))
    func clusterBecomesReady() async throws {
        _ = try Deployment.tool("nats-server")
        _ = try Deployment.nodeBinary()
        // A shift of its own (below the ephemeral range), so a developer's running cluster does not collide.
        let shift = [21000, 21700, 22400, 23100].randomElement()!
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("estuary-deploy-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let run = try await runProcess(
            Self.script, ["--check"],
            environment: [
                "CLUSTER_PORT_SHIFT": String(shift), "CLUSTER_DIR": directory.path,
                "CLUSTER_READY_TIMEOUT": "45",
                "ESTUARY_NODE": try Deployment.nodeBinary().path,
                // Unset (empty counts as unset): the first run in the directory generates both.
                "ESTUARY_ADMIN_TOKEN": "", "ESTUARY_NATS_TOKEN": "",
            ],
            timeout: .seconds(75)
        )
        #expect(run.status == 0 && !run.timedOut, "\(run.summary)")
        #expect(run.output.contains("ok: 10 services ready"), "\(run.summary)")
        for service in ["nats-1", "nats-2", "nats-3"] + ComposeTests.estuaryServices {
            #expect(run.output.contains("\(service) ready"), "\(service): \(run.output)")
        }
        // The secrets it generated: where it said, 64 hex digits, readable by this user only.
        for name in ["admin-token", "nats-token"] {
            let file = directory.appendingPathComponent("secrets/\(name)")
            #expect(run.output.contains("generated into \(file.path)"), "\(name): \(run.output)")
            let secret = try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(secret.count == 64 && secret.allSatisfy(\.isHexDigit), "\(name): \(secret.count) characters")
            #expect(permissionBits(of: file) == 0o600, "\(name): mode \(String(permissionBits(of: file) ?? 0, radix: 8))")
        }
        // The nodes' logs carry the NATS token (in their bus URL): private too.
        #expect(permissionBits(of: directory.appendingPathComponent("logs/coordinator.log")) == 0o600)
    }

    @Test("cluster-local.sh --check names a role that exits early, and fails")
    func clusterReportsEarlyExit() async throws {
        _ = try Deployment.tool("nats-server")
        let node = try Deployment.nodeBinary()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("estuary-deploy-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // A node that refuses the transcode role, as an unfinished role would.
        let wrapper = directory.appendingPathComponent("node-without-transcode")
        try """
        #!/bin/sh
        for a in "$@"; do [ "$a" = transcode ] && { echo "role transcode is not available" >&2; exit 3; }; done
        exec '\(node.path)' "$@"
        """.write(to: wrapper, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: wrapper.path)

        let shift = [21350, 22050, 22750, 23450].randomElement()!
        let run = try await runProcess(
            Self.script, ["--check"],
            environment: [
                "CLUSTER_PORT_SHIFT": String(shift), "CLUSTER_DIR": directory.appendingPathComponent("run").path,
                "CLUSTER_READY_TIMEOUT": "45", "ESTUARY_NODE": wrapper.path,
            ],
            timeout: .seconds(75)
        )
        #expect(run.status == 1 && !run.timedOut, "\(run.summary)")
        #expect(run.output.contains("(role transcode) exited with status 3"), "\(run.summary)")
        #expect(run.output.contains("role transcode is not available"), "\(run.summary)")
    }
}
