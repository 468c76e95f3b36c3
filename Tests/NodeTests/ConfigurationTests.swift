import Cluster
import Configuration
import Foundation
import Media
import RTMP
import Relay
import Testing
import Transcode

@testable import Node

/// The configuration's sources (`ConfigurationDocument`, `ConfigurationSources`), what
/// `--check-config` prints, and `docs/configuration.md` against the code's defaults.
struct ConfigurationTests {
    static func document(_ text: String, path: String = "estuary.yaml") throws -> ConfigurationDocument {
        try ConfigurationDocument(bytes: Data(text.utf8), path: path)
    }

    static func load(_ document: ConfigurationDocument?, environment: [String: String] = [:], flags: [String: ConfigContent] = [:]) throws -> ConfigurationLoader.Loaded {
        try ConfigurationLoader(role: .all, sources: ConfigurationSources(flags: flags, environment: environment), path: nil).load(document)
    }

    static func printed(_ loaded: ConfigurationLoader.Loaded) -> String {
        NodeConfiguration.printable(loaded.configuration.effectiveSettings(resolved: loaded.resolved))
    }

    @Test("YAML and JSON of the same settings resolve alike, ladders (arrays of objects) included")
    func yamlAndJSON() throws {
        let yaml = try Self.document("""
        rtmpPort: 1940
        publisherGraceSeconds: 3
        limitLoopbackConnections: true
        ladders:
          abr:
            - {name: 480p, height: 480, videoBitRate: 1400000}
            - name: 240p
              height: 240
              videoBitRate: 400000
        forwards: {live: ["rtmp://cdn.example/live"]}
        """)
        let json = try Self.document("""
        {"rtmpPort": 1940, "publisherGraceSeconds": 3, "limitLoopbackConnections": true,
         "ladders": {"abr": [{"name": "480p", "height": 480, "videoBitRate": 1400000}, {"name": "240p", "height": 240, "videoBitRate": 400000}]},
         "forwards": {"live": ["rtmp://cdn.example/live"]}}
        """, path: "estuary.json")
        let fromYAML = try Self.load(yaml)
        let fromJSON = try Self.load(json)
        #expect(Self.printed(fromYAML) == Self.printed(fromJSON))
        #expect(fromYAML.configuration.rtmp.port == 1940)
        #expect(fromYAML.configuration.ladders["abr"]?.rungs.map(\.name) == ["480p", "240p"])
        #expect(fromYAML.configuration.rtmp.connectionLimits.limitLoopback)
        #expect(fromYAML.configuration.forwards["live"]?.count == 1)
    }

    @Test("A tab, a duplicate key, an alias, a JSON trailing comma, an unknown key and a mistyped value are refused with the file, the line or key, and what was found", arguments: [
        ("estuary.yaml", "rtmpPort: 1\n\tmaxStreams: 3\n", "line 2"),
        ("estuary.yaml", "rtmpPort: 1\nmaxStreams: 2\nrtmpPort: 3\n", "duplicate key 'rtmpPort'"),
        ("estuary.yaml", "base: &b {height: 1}\n", "unknown key 'base'"),
        ("estuary.yaml", "ladders:\n  abr: *missing\n", "line 2"),
        ("estuary.json", "{\"rtmpPort\": 1,\n \"maxStreams\": 2,\n}", "line 2: a comma before a closing bracket"),
        ("estuary.json", "{\"forwards\": {\"live\": [\"rtmp://a/live\",]}}", "a comma before a closing bracket"),
        ("estuary.yaml", "maxConections: 5\n", "unknown key 'maxConections'"),
        ("estuary.yaml", "ladders:\n  abr:\n    - {name: a, heigth: 1, videoBitRate: 1}\n", "unknown key 'ladders.abr[0].heigth'"),
        ("estuary.yaml", "rtmpPort: \"1935\"\n", "'rtmpPort': expected a whole number, got a string"),
        ("estuary.yaml", "- 1\n- 2\n", "expected a mapping"),
    ])
    func refusals(path: String, text: String, expected: String) {
        do {
            _ = try Self.document(text, path: path)
            Issue.record("\(text) was accepted")
        } catch let error as ConfigurationError {
            #expect(error.description.contains(expected) && error.description.contains(path), "\(error.description)")
            #expect(!error.description.contains("\n"), "not one line: \(error.description)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test("The file, then ESTUARY_… variables, then flags: each overrides the last, key by key")
    func layering() throws {
        let file = try Self.document("rtmpPort: 1001\nmaxStreams: 5\nnats: {servers: [\"nats://a:4222\"], token: from-file}\n")
        let fileOnly = try Self.load(file)
        #expect(fileOnly.configuration.rtmp.port == 1001 && fileOnly.configuration.nats?.token == "from-file")
        let environment = ["ESTUARY_RTMP_PORT": "1002", "ESTUARY_NATS_TOKEN": "from-env", "ESTUARY_ADMIN_TOKEN": "admin", "ESTUARY_HLS_PART_SECONDS": "0.5"]
        let withEnvironment = try Self.load(file, environment: environment)
        #expect(withEnvironment.configuration.rtmp.port == 1002)
        #expect(withEnvironment.configuration.maxStreams == 5)
        #expect(withEnvironment.configuration.nats?.token == "from-env")
        #expect(withEnvironment.configuration.nats?.servers == ["nats://a:4222"])
        #expect(withEnvironment.configuration.adminToken == "admin")
        #expect(withEnvironment.configuration.hls.partTargetDuration == .milliseconds(500))
        let withFlags = try Self.load(file, environment: environment, flags: ["rtmpPort": .int(1003), "nats.servers": .stringArray(["nats://b:4222"])])
        #expect(withFlags.configuration.rtmp.port == 1003)
        #expect(withFlags.configuration.nats?.servers == ["nats://b:4222"])
        #expect(withFlags.configuration.nats?.token == "from-env")
        // An empty token is none; a token alone joins no bus.
        let empty = try Self.load(nil, environment: ["ESTUARY_ADMIN_TOKEN": "", "ESTUARY_NATS_TOKEN": "x"])
        #expect(empty.configuration.adminToken == nil && empty.configuration.nats == nil)
        #expect(throws: ConfigurationError.self) { try Self.load(nil, environment: ["ESTUARY_MAX_STREAMS": "many"]) }
    }

    @Test("Every key of one value can be set from its ESTUARY_ variable, named by the documented rule")
    func everyKeyFromTheEnvironment() throws {
        #expect(ConfigurationSources.environmentName("maxReassemblyBytesPerConnection") == "ESTUARY_MAX_REASSEMBLY_BYTES_PER_CONNECTION")
        #expect(ConfigurationSources.environmentName("nodeID") == "ESTUARY_NODE_ID")
        #expect(ConfigurationSources.environmentName("nats.tls.caFile") == "ESTUARY_NATS_TLS_CA_FILE")
        #expect(NodeConfigurationFile.scalarKeys.count >= 60)
        for (key, type) in NodeConfigurationFile.scalarKeys {
            let (raw, expected): (String, String) = switch type {
            case .int: ("7", "7")
            case .double: ("7.5", "7.5")
            case .bool: ("true", "1")
            case .stringArray: ("a,b", "(a,b)")
            default: ("text", "text")
            }
            let sources = ConfigurationSources(flags: [:], environment: [ConfigurationSources.environmentName(key): raw])
            let resolved = try sources.resolve(nil)
            var value: Any? = try JSONSerialization.jsonObject(with: JSONEncoder().encode(resolved))
            for component in key.split(separator: ".") { value = (value as? [String: Any])?[String(component)] }
            let found = (value as? [Any]).map { "(" + $0.map { "\($0)" }.joined(separator: ",") + ")" } ?? value.map { "\($0)" }
            #expect(found == expected, "\(key) from \(ConfigurationSources.environmentName(key)): \(found ?? "nothing")")
        }
    }

    @Test("--check-config's print masks every secret: the admin token, NATS credentials in fields and URLs, signing secrets")
    func secretsMasked() throws {
        let file = try Self.document("""
        adminToken: admin-secret-1
        nats: {servers: ["nats://url-secret-2@a:4222"], password: pass-secret-3, user: u}
        tokens: {live: {hmacSecret: hmac-secret-4-0123456, jwtSecret: jwt-secret-5-0123456789abcdef012345}}
        """)
        let printed = Self.printed(try Self.load(file))
        for secret in ["admin-secret-1", "url-secret-2", "pass-secret-3", "hmac-secret-4", "jwt-secret-5"] {
            #expect(!printed.contains(secret), "\(secret) printed")
        }
        #expect(printed.contains("nats://********@a:4222"))
    }

    @Test("docs/configuration.md lists every key of the file, and each default it gives is the code's")
    func documentationMatchesDefaults() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        var documented: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            let key = cells[1].replacingOccurrences(of: "`", with: "")
            documented[key] = cells[cells.count - 3]
        }
        let keys = Mirror(reflecting: NodeConfigurationFile()).children.compactMap(\.label)
        for key in keys {
            #expect(documented[key] != nil, "docs/configuration.md has no row for '\(key)'")
        }
        let defaults = try Self.load(nil)
        let settings = defaults.configuration.effectiveSettings(resolved: defaults.resolved)
        var effective: [String: Any] = [:]
        for child in Mirror(reflecting: settings).children {
            guard let label = child.label else { continue }
            // Unwrap the optional: nil stays out of the table.
            if let value = Mirror(reflecting: child.value).children.first?.value { effective[label] = value }
        }
        var compared = 0
        for (key, cell) in documented {
            let stated = cell.replacingOccurrences(of: "`", with: "")
            // Machine-dependent defaults are described, not given.
            if stated.hasPrefix("the ") || stated.hasPrefix("<") || stated.hasPrefix("{") { continue }
            let word = String(stated.split(separator: " ").first ?? "")
            switch effective[key] {
            case nil:
                #expect(["none", "off"].contains(word), "'\(key)': the code has no default, the docs say \(cell)")
            case let array as [String]:
                #expect(array.isEmpty && word == "none", "'\(key)': the code's default is \(array), the docs say \(cell)")
            case let bool as Bool:
                #expect(word == String(bool), "'\(key)': the code says \(bool), the docs \(cell)")
            case let int as Int:
                #expect(Int(word) == int, "'\(key)': the code says \(int), the docs \(cell)")
            case let double as Double:
                #expect(Double(word) == double, "'\(key)': the code says \(double), the docs \(cell)")
            case let string as String:
                #expect(word == string, "'\(key)': the code says \(string), the docs \(cell)")
            default:
                continue
            }
            compared += 1
        }
        #expect(compared >= 50, "only \(compared) defaults compared")
    }
}

extension ConfigurationTests {
    @Test("docs/estuary.example.yaml, the example docs/configuration.md shows, passes the checks a start makes")
    func exampleFileLoads() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent("docs/estuary.example.yaml").path
        let loader = ConfigurationLoader(role: .all, sources: ConfigurationSources(flags: [:], environment: [:]), path: path)
        let loaded = try loader.load(try loader.readDocument())
        #expect(loaded.configuration.ladders["abr"]?.rungs.count == 2)
        #expect(loaded.configuration.hooksOutlastingAdmission().isEmpty && loaded.configuration.tokens["*"] != nil && loaded.configuration.forwards["live"]?.count == 1)
        let docs = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        #expect(docs.contains(try String(contentsOfFile: path, encoding: .utf8)), "the example in docs/configuration.md is not docs/estuary.example.yaml")
    }
}
