import Configuration
import Foundation

/// Where a node's settings come from, each overriding the last, key by key: the file
/// (`ConfigurationDocument`), then `ESTUARY_…` environment variables, then flags.
///
/// Every scalar key of `NodeConfigurationFile` (and of its `nats`, `nats.tls` and `tls`
/// sections) can be set all three ways: `rtmpPort` is `ESTUARY_RTMP_PORT` and
/// `--rtmp-port`, `nats.token` is `ESTUARY_NATS_TOKEN`. Keyed sections (`ladders`, `hooks`,
/// `tokens`, `forwards`, `pulls`) come from the file only. The environment and the flags
/// are read once at start; a reload (`ConfigurationReloader`) lays them again over the new
/// file, so a reload never undoes a flag.
struct ConfigurationSources: Sendable {
    /// Flags given on the command line, by key.
    let flags: InMemoryProvider
    /// The process's environment under the `estuary` prefix.
    let environment: KeyMappingProvider<EnvironmentVariablesProvider>
    /// The variables themselves, to quote a value that does not parse.
    private let variables: [String: String]

    init(flags: [String: ConfigContent], environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.flags = InMemoryProvider(
            name: "flags",
            values: Dictionary(uniqueKeysWithValues: flags.map { (AbsoluteConfigKey($0.key.split(separator: ".").map(String.init)), ConfigValue($0.value, isSecret: false)) })
        )
        self.environment = EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: ["estuary"])
        variables = environment.filter { $0.key.hasPrefix("ESTUARY_") }
    }

    /// The file's settings (none without a file) with the environment and the flags laid over.
    func resolve(_ document: ConfigurationDocument?) throws(ConfigurationError) -> NodeConfigurationFile {
        var object: [String: Any]
        do {
            let encoded = try JSONEncoder().encode(document?.file ?? NodeConfigurationFile())
            object = (try JSONSerialization.jsonObject(with: encoded) as? [String: Any]) ?? [:]
        } catch {
            throw .invalidValue("\(error)")
        }
        for (key, type) in NodeConfigurationFile.scalarKeys {
            guard let content = try override(key, type) else { continue }
            Self.set(Self.foundationValue(content), at: key.split(separator: ".").map(String.init), in: &object)
        }
        return try NodeConfigurationFile.decode(object, path: document?.path ?? "the environment and flags")
    }

    /// A key's value from the flags, else from the environment; nil when neither sets it.
    private func override(_ key: String, _ type: ConfigType) throws(ConfigurationError) -> ConfigContent? {
        let absolute = AbsoluteConfigKey(key.split(separator: ".").map(String.init))
        if let value = try? flags.value(forKey: absolute, type: type).value { return value.content }
        do {
            return try environment.value(forKey: absolute, type: type).value?.content
        } catch {
            let name = Self.environmentName(key)
            throw .invalidValue("\(name): expected \(Self.describe(type)), got '\(variables[name]?.prefix(40) ?? "")'")
        }
    }

    /// The environment variable of a key: `maxStreams` is `ESTUARY_MAX_STREAMS`.
    static func environmentName(_ key: String) -> String {
        var name = "ESTUARY"
        for component in key.split(separator: ".") {
            name += "_"
            var previous: Character?
            for character in component {
                if let previous, previous.isLowercase, character.isUppercase { name += "_" }
                name += character.isLetter || character.isNumber ? character.uppercased() : "_"
                previous = character
            }
        }
        return name
    }

    private static func describe(_ type: ConfigType) -> String {
        switch type {
        case .int: "a whole number"
        case .double: "a number"
        case .bool: "true or false"
        case .stringArray: "values separated by commas"
        default: "a string"
        }
    }

    private static func foundationValue(_ content: ConfigContent) -> Any {
        switch content {
        case .string(let value): value
        case .int(let value): value
        case .double(let value): value
        case .bool(let value): value
        case .stringArray(let value): value
        case .intArray(let value): value
        case .doubleArray(let value): value
        case .boolArray(let value): value
        case .bytes(let value): value
        case .byteChunkArray(let value): value
        }
    }

    private static func set(_ value: Any, at path: [String], in object: inout [String: Any]) {
        guard let first = path.first else { return }
        if path.count == 1 {
            object[first] = value
            return
        }
        var nested = object[first] as? [String: Any] ?? [:]
        set(value, at: Array(path.dropFirst()), in: &nested)
        object[first] = nested
    }
}

extension NodeConfigurationFile {
    /// Every key that holds one value or a list of strings, with its type: the keys the
    /// environment and flags may set.
    static let scalarKeys: [(key: String, type: ConfigType)] = {
        var keys: [(String, ConfigType)] = []
        func walk(_ value: Any, prefix: String) {
            for child in Mirror(reflecting: value).children {
                guard let label = child.label else { continue }
                let key = prefix + label
                switch ObjectIdentifier(Swift.type(of: child.value)) {
                case ObjectIdentifier(Int?.self): keys.append((key, .int))
                case ObjectIdentifier(Double?.self): keys.append((key, .double))
                case ObjectIdentifier(Bool?.self): keys.append((key, .bool))
                case ObjectIdentifier(String?.self): keys.append((key, .string))
                case ObjectIdentifier([String]?.self): keys.append((key, .stringArray))
                case ObjectIdentifier(NATSSettings?.self): walk(NATSSettings(), prefix: key + ".")
                case ObjectIdentifier(TLSSettings?.self): walk(TLSSettings(), prefix: key + ".")
                case ObjectIdentifier(ServerTLSSettings?.self): walk(ServerTLSSettings(), prefix: key + ".")
                default: break
                }
            }
        }
        walk(NodeConfigurationFile(), prefix: "")
        return keys
    }()
}
