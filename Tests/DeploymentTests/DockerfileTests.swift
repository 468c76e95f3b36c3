import Foundation
import Testing

/// docker/Dockerfile: two stages, and a runtime stage that installs every library the binary links.
@Suite("Dockerfile")
struct DockerfileTests {
    struct Stage {
        let from: String
        var instructions: [String] = []
        /// Packages of every `apt-get install` in the stage (options dropped).
        var aptPackages: Set<String> {
            var packages = Set<String>()
            for instruction in instructions where instruction.hasPrefix("RUN ") {
                for command in instruction.components(separatedBy: "&&") {
                    let words = command.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                    guard let install = words.firstIndex(of: "install"), words[..<install].contains("apt-get") else { continue }
                    for word in words[(install + 1)...] where !word.hasPrefix("-") && !word.contains("=") {
                        packages.insert(word)
                    }
                }
            }
            return packages
        }
        func has(_ prefix: String) -> Bool { instructions.contains { $0.hasPrefix(prefix) } }
    }

    /// The Dockerfile as logical instructions (continuations joined, comments dropped), by stage.
    static func stages() throws -> [Stage] {
        let text = try String(contentsOf: Deployment.file("docker/Dockerfile"), encoding: .utf8)
        var logical: [String] = []
        var current = ""
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") || (line.isEmpty && current.isEmpty) { continue }
            if line.hasSuffix("\\") {
                current += line.dropLast() + " "
            } else {
                current += line
                if !current.trimmingCharacters(in: .whitespaces).isEmpty { logical.append(current) }
                current = ""
            }
        }
        var stages: [Stage] = []
        for instruction in logical {
            if instruction.uppercased().hasPrefix("FROM ") {
                stages.append(Stage(from: String(instruction.dropFirst(5)).trimmingCharacters(in: .whitespaces)))
            } else if !stages.isEmpty {
                stages[stages.count - 1].instructions.append(instruction)
            }
        }
        return stages
    }

    @Test("two stages: a Swift 6.3 bookworm build, a slim bookworm runtime running node as non-root")
    func stagesAreRight() throws {
        let stages = try Self.stages()
        try #require(stages.count == 2, "stages: \(stages.map(\.from))")
        let build = stages[0], runtime = stages[1]
        #expect(build.from.hasPrefix("swift:6.3") && build.from.contains("bookworm"), "\(build.from)")
        #expect(runtime.from.hasPrefix("debian:bookworm-slim"), "\(runtime.from)")

        let devPackages: Set<String> = [
            "libavcodec-dev", "libavformat-dev", "libavutil-dev", "libswscale-dev", "libswresample-dev",
            "libnats-dev", "libsqlite3-dev", "libsrt-gnutls-dev", "pkg-config",
        ]
        #expect(devPackages.isSubset(of: build.aptPackages), "missing: \(devPackages.subtracting(build.aptPackages))")
        #expect(build.instructions.contains {
            $0.contains("swift build -c release --product estuary") && $0.contains("--static-swift-stdlib")
        })

        #expect(runtime.aptPackages.contains("curl"), "curl for healthchecks")
        #expect(runtime.aptPackages.allSatisfy { !$0.hasSuffix("-dev") }, "no -dev packages at runtime: \(runtime.aptPackages)")
        #expect(runtime.has("COPY --from=build"))
        let user = runtime.instructions.last { $0.hasPrefix("USER ") }
        #expect(user != nil && user != "USER root" && user != "USER 0", "non-root user: \(user ?? "none")")
        let exposed = Set(runtime.instructions.filter { $0.hasPrefix("EXPOSE ") }.flatMap { $0.split(separator: " ").dropFirst().map(String.init) })
        #expect(exposed.isSuperset(of: ["1935", "8080", "8090"]), "EXPOSE \(exposed)")
        #expect(runtime.instructions.contains("ENTRYPOINT [\"/usr/local/bin/estuary\"]"))
    }

    /// Swift toolchain libraries: not Debian packages; `--static-swift-stdlib` links them in.
    static func isSwiftRuntime(_ library: String) -> Bool {
        ["libswift", "libFoundation", "lib_Foundation", "libdispatch", "libBlocksRuntime", "libXCTest", "libTesting"]
            .contains { library.hasPrefix($0) }
    }

    @Test("the runtime stage installs the package of every library node links (ldd, dpkg -S)")
    func runtimeHasEveryLinkedLibrary() async throws {
        let node = try Deployment.nodeBinary()
        let stages = try Self.stages()
        try #require(stages.count == 2)
        let runtimePackages = stages[1].aptPackages
        let staticStdlib = stages[0].instructions.contains { $0.contains("--static-swift-stdlib") }

        // Direct dependencies (DT_NEEDED); their own dependencies come with their packages.
        let needed = try ELFFile.neededLibraries(of: node)
        try #require(needed.contains { $0.hasPrefix("libavcodec") }, "NEEDED: \(needed)")

        // Where each resolves, per ldd; nothing may be missing.
        let ldd = try await runProcess(try Deployment.tool("ldd"), [node.path], timeout: .seconds(30))
        try #require(ldd.status == 0, "ldd: \(ldd.summary)")
        #expect(!ldd.output.contains("not found"), "ldd: \(ldd.output)")
        var resolved: [String: String] = [:]
        for line in ldd.output.split(separator: "\n") {
            let parts = line.trimmingCharacters(in: .whitespaces).components(separatedBy: " => ")
            guard parts.count == 2, let path = parts[1].split(separator: " ").first else { continue }
            resolved[parts[0]] = String(path)
        }

        let dpkg = try Deployment.tool("dpkg")
        var missing: [String] = []
        var checked: [String: String] = [:]
        for library in needed {
            if Self.isSwiftRuntime(library) {
                #expect(staticStdlib, "\(library) is a Swift runtime library: the build needs --static-swift-stdlib")
                continue
            }
            guard let path = resolved[library] else {
                if library.hasPrefix("ld-linux") { continue }  // the loader itself, from libc6
                Issue.record("ldd does not resolve \(library)")
                continue
            }
            // dpkg knows the path it installed: on merged-/usr systems /lib/... is /usr/lib/....
            var candidates = [path, URL(fileURLWithPath: path).resolvingSymlinksInPath().path]
            if path.hasPrefix("/lib") { candidates.append("/usr" + path) }
            var owner: String?
            for candidate in candidates {
                let query = try await runProcess(dpkg, ["-S", candidate], timeout: .seconds(30))
                if query.status == 0, let first = query.output.split(separator: "\n").first, let colon = first.firstIndex(of: ":") {
                    owner = String(first[..<colon])  // "libnats3.4:amd64: /usr/lib/…" → "libnats3.4"
                    break
                }
            }
            guard let owner else {
                Issue.record("no Debian package owns \(path) (\(library))")
                continue
            }
            checked[library] = owner
            // libc6 is Essential: in every Debian image.
            if owner != "libc6" && !runtimePackages.contains(owner) {
                missing.append("\(owner) (\(library))")
            }
        }
        #expect(missing.isEmpty, "the runtime stage does not install: \(missing.joined(separator: ", ")); it installs \(runtimePackages.sorted())")
        #expect(checked.values.contains("libnats3.4") || checked.values.contains { $0.hasPrefix("libnats") }, "checked \(checked)")
    }

    @Test("the library check can fail: a runtime stage without libnats misses it")
    func aptListParsing() throws {
        var stage = Stage(from: "debian:bookworm-slim")
        stage.instructions = ["RUN apt-get update && apt-get install -y --no-install-recommends libavcodec59 curl && rm -rf /var/lib/apt/lists/*"]
        #expect(stage.aptPackages == ["libavcodec59", "curl"])
        #expect(!stage.aptPackages.contains("libnats3.4"))
    }
}
