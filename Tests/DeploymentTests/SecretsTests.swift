import Foundation
import Testing
import Yams

/// No shipped deployment file carries a default secret: compose requires the admin and NATS
/// tokens, nats.conf requires a token of every client, and nothing under docker/ or scripts/
/// falls back to a literal.
@Suite("deployment secrets")
struct SecretsTests {
    /// The secrets the compose file requires.
    static let requiredSecrets = ["ESTUARY_ADMIN_TOKEN", "ESTUARY_NATS_TOKEN"]

    /// A variable or key that holds a secret, by its name.
    static func isSecretName(_ name: String) -> Bool {
        let upper = name.uppercased()
        return ["TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "_KEY"].contains { upper.contains($0) }
    }

    /// Every text file under docker/ and scripts/: what ships. Hidden files (an operator's
    /// docker/.env holds real secrets) and caches are not shipped.
    static func shippedFiles() throws -> [(path: String, text: String)] {
        var files: [(path: String, text: String)] = []
        for directory in ["docker", "scripts"] {
            let root = Deployment.file(directory)
            for relative in try FileManager.default.subpathsOfDirectory(atPath: root.path).sorted() {
                let components = relative.split(separator: "/")
                guard !components.contains(where: { $0.hasPrefix(".") || $0 == "__pycache__" }) else { continue }
                let url = root.appendingPathComponent(relative)
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                      let text = try? String(contentsOf: url, encoding: .utf8)
                else { continue }
                files.append(("\(directory)/\(relative)", text))
            }
        }
        return files
    }

    /// Defaults given to secret variables in shell or compose syntax: `${NAME:-word}`, `${NAME-word}`
    /// with a non-empty word (`${NAME-}`, "empty when unset", is no secret).
    static func secretDefaults(in text: String) -> [String] {
        var found: [String] = []
        var rest = Substring(text)
        while let start = rest.range(of: "${") {
            rest = rest[start.upperBound...]
            let name = rest.prefix { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }
            var after = rest[name.endIndex...]
            if after.hasPrefix(":") { after = after.dropFirst() }
            guard !name.isEmpty, after.hasPrefix("-"), let close = after.firstIndex(of: "}") else { continue }
            let word = after[after.index(after: after.startIndex)..<close]
            if isSecretName(String(name)), !word.isEmpty {
                found.append("${\(name)…-\(word)}")
            }
        }
        return found
    }

    /// Literal values assigned to secret variables: `NAME=value` (shell, env files) where the
    /// value is not an expansion (`$…`, `"$…"`) or a format (`%s`).
    static func secretAssignments(in text: String) -> [String] {
        var found: [String] = []
        for line in text.split(separator: "\n") {
            var rest = Substring(line)
            while let equals = rest.firstIndex(of: "=") {
                let before = rest[..<equals]
                let name = String(before.reversed().prefix { $0.isASCII && ($0.isUppercase || $0.isNumber || $0 == "_") }.reversed())
                var value = rest[rest.index(after: equals)...]
                rest = value
                guard !name.isEmpty, name.first?.isLetter == true, isSecretName(name) else { continue }
                if value.first == "\"" || value.first == "'" { value = value.dropFirst() }
                if let first = value.first, first.isLetter || first.isNumber {
                    found.append("\(name)=\(value.prefix(20))")
                }
            }
        }
        return found
    }

    @Test("no file under docker/ or scripts/ carries a default secret")
    func noDefaultSecretIsShipped() throws {
        let files = try Self.shippedFiles()
        #expect(files.contains { $0.path == "docker/docker-compose.yml" } && files.contains { $0.path == "scripts/cluster-local.sh" }, "\(files.map(\.path))")
        for file in files {
            let lowered = file.text.lowercased()
            for placeholder in ["change-me", "changeme", "change_me"] {
                #expect(!lowered.contains(placeholder), "\(file.path) contains '\(placeholder)'")
            }
            #expect(Self.secretDefaults(in: file.text).isEmpty, "\(file.path): a secret with a default: \(Self.secretDefaults(in: file.text))")
            #expect(Self.secretAssignments(in: file.text).isEmpty, "\(file.path): a secret set to a literal: \(Self.secretAssignments(in: file.text))")
            #expect(!file.text.contains("--admin-token "), "\(file.path): the admin token comes from ESTUARY_ADMIN_TOKEN, never a command line")
        }
    }

    @Test("the checks above catch what they are for")
    func checksCatchDefaults() {
        #expect(Self.secretDefaults(in: #"export ESTUARY_ADMIN_TOKEN="${ESTUARY_ADMIN_TOKEN:-hunter2}""#) == ["${ESTUARY_ADMIN_TOKEN…-hunter2}"])
        #expect(Self.secretDefaults(in: "token: ${NATS_TOKEN-abc}").count == 1)
        #expect(Self.secretDefaults(in: #"[[ -n "${ESTUARY_NATS_TOKEN-}" ]]; ${CLUSTER_DIR:-/tmp}"#).isEmpty)
        #expect(Self.secretAssignments(in: "ESTUARY_ADMIN_TOKEN=secret docker compose up").count == 1)
        #expect(Self.secretAssignments(in: #"export NATS_PASSWORD="hunter2""#).count == 1)
        #expect(Self.secretAssignments(in: #"ESTUARY_NATS_TOKEN="$(openssl rand -hex 32)"; printf 'ESTUARY_ADMIN_TOKEN=%s\n'"#).isEmpty)
    }

    @Test("compose requires both secrets: `${VAR:?message}` wherever they are used, no other secret")
    func composeRequiresTheSecrets() throws {
        let compose = try ComposeFile.load()
        var used: Set<String> = []
        for scalar in compose.allScalars {
            for reference in try ComposeFile.references(in: scalar) {
                guard Self.isSecretName(reference.name) else { continue }
                used.insert(reference.name)
                #expect(reference.operation == ":?" && !reference.word.isEmpty, "\(reference): a secret must be required, with a message saying how to set it")
            }
        }
        #expect(used == Set(Self.requiredSecrets), "secrets used by the compose file: \(used.sorted())")

        // A secret-named environment entry is the required variable and nothing else (but quotes).
        for service in compose.services {
            for (key, value) in service.rawEnvironment where Self.isSecretName(key) {
                let references = try ComposeFile.references(in: value)
                #expect(references.count == 1 && references.allSatisfy(\.isRequired), "\(service.name): \(key): \(value)")
                let rest = references.reduce(value) { $0.replacingOccurrences(of: $1.description, with: "") }
                #expect(rest == "" || rest == "\"\"", "\(service.name): \(key) has a literal part: \(value)")
            }
            #expect(service.command?.contains("--admin-token") != true, "\(service.name): the admin token belongs in the environment")
        }

        // Without the secrets, compose refuses to start, naming each missing variable.
        for name in Self.requiredSecrets {
            var variables = ComposeFile.testVariables
            variables[name] = nil
            var refusals = 0
            for service in compose.services {
                do {
                    _ = try service.interpolatedCommand(variables)
                    _ = try service.interpolatedEnvironment(variables)
                } catch {
                    refusals += 1
                    #expect("\(error)".contains("required variable \(name)"), "\(service.name): \(error)")
                }
            }
            #expect(refusals > 0, "compose starts without \(name)")
            variables[name] = ""
            #expect(throws: DeploymentFailure.self, "an empty \(name) counts as missing") {
                for service in compose.services {
                    _ = try service.interpolatedCommand(variables)
                    _ = try service.interpolatedEnvironment(variables)
                }
            }
        }
        // With them, every service interpolates.
        for service in compose.services {
            _ = try service.interpolatedEnvironment(ComposeFile.testVariables)
            if service.command != nil { _ = try service.interpolatedCommand(ComposeFile.testVariables) }
        }
    }

    /// docker/nats.conf without comments (`#` and `//` to the end of a line).
    static func natsConfiguration() throws -> String {
        let text = try String(contentsOf: Deployment.file("docker/nats.conf"), encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            var line = Substring(line)
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            if let slashes = line.range(of: "//") { line = line[..<slashes.lowerBound] }
            return String(line)
        }.joined(separator: "\n")
    }

    @Test("nats.conf requires authorization: a token from the environment, no literal")
    func natsRequiresAuthorization() throws {
        let configuration = try Self.natsConfiguration()
        let start = try #require(configuration.range(of: "authorization"), "docker/nats.conf has no authorization block")
        let open = try #require(configuration[start.upperBound...].firstIndex(of: "{"), "authorization { … }")
        let close = try #require(configuration[open...].firstIndex(of: "}"), "authorization { … }")
        var settings: [String: String] = [:]
        for line in configuration[configuration.index(after: open)..<close].split(separator: "\n") {
            let parts = line.split(maxSplits: 1, whereSeparator: { $0 == ":" || $0 == "=" || $0 == " " || $0 == "\t" })
            guard parts.count == 2 else { continue }
            settings[parts[0].trimmingCharacters(in: .whitespaces)] = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: " \t:="))
        }
        #expect(settings["token"] == "$ESTUARY_NATS_TOKEN_QUOTED", "authorization: \(settings)")
        for (key, value) in settings where Self.isSecretName(key) || key == "password" || key == "user" {
            #expect(value.hasPrefix("$"), "nats.conf: \(key) must come from the environment, not a literal")
        }
        // Nothing outside the block may switch authentication off again.
        #expect(!configuration.contains("no_auth_user"), "no_auth_user lets clients in without credentials")
    }

    @Test("nats-server refuses nats.conf without the token, and reads any hex token quoted as compose passes it")
    func natsServerReadsTheToken() async throws {
        let server = try Deployment.tool("nats-server")
        let configuration = Deployment.file("docker/nats.conf").path
        let missing = try await runProcess(server, ["-c", configuration, "-t"], environment: [:], timeout: .seconds(20))
        if ProcessInfo.processInfo.environment["ESTUARY_NATS_TOKEN_QUOTED"] == nil {
            #expect(missing.status != 0, "nats-server starts without a token: \(missing.summary)")
            #expect(missing.output.contains("ESTUARY_NATS_TOKEN_QUOTED"), "\(missing.summary)")
        }
        // Unquoted, nats-server would read these as numbers (0123…, 12e4…) and not start.
        for token in ["0123456789", "12e4abcdef", "1e5", ComposeFile.randomToken()] {
            let run = try await runProcess(
                server, ["-c", configuration, "-t"], environment: ["ESTUARY_NATS_TOKEN_QUOTED": "\"\(token)\""], timeout: .seconds(20)
            )
            #expect(run.status == 0, "token \(token): \(run.summary)")
        }
    }
}
