import Configuration
import Foundation
import Yams

/// One version of the configuration file, as swift-configuration's file providers read it
/// (`ReloadingFileProvider<ConfigurationDocument>` watches the file and makes a new one per
/// change).
///
/// The file is YAML, and JSON is accepted because JSON is YAML: both are composed by Yams,
/// which refuses tabs in indentation and duplicate keys with their line. A `.json` file is
/// also held to JSON's own grammar (no trailing commas), since other tools will read it.
/// swift-configuration's own YAML snapshot flattens a file into scalar keys and refuses
/// arrays of objects, which ladders are; so this snapshot keeps the whole tree, decoded into
/// `NodeConfigurationFile` (unknown keys refused, every value typed), and answers the
/// providers' scalar lookups from it, so the environment and flags override the file key by
/// key (`ConfigurationSources`).
struct ConfigurationDocument: FileConfigSnapshot {
    struct ParsingOptions: FileParsingOptions {
        /// The file's name as errors give it.
        var path = "configuration"
        /// Told why a new version of the file was refused; the provider keeps the old one and
        /// logs the refusal only at debug.
        var rejected: @Sendable (ConfigurationError) -> Void = { _ in }

        static var `default`: ParsingOptions { ParsingOptions() }
    }

    let providerName: String
    let path: String
    /// The file's settings, keys checked and values typed.
    let file: NodeConfigurationFile
    /// The scalar and scalar-array values by dotted key (`nats.token`).
    let values: [String: ConfigContent]

    init(data: RawSpan, providerName: String, parsingOptions: ParsingOptions) throws {
        let bytes = data.withUnsafeBytes { Data($0) }
        do {
            try self.init(bytes: bytes, path: parsingOptions.path, providerName: providerName)
        } catch {
            parsingOptions.rejected(error)
            throw error
        }
    }

    init(bytes: Data, path: String, providerName: String = "file") throws(ConfigurationError) {
        self.providerName = providerName
        self.path = path
        guard let text = String(data: bytes, encoding: .utf8) else {
            throw .invalidFile(path, "not UTF-8 text")
        }
        if path.lowercased().hasSuffix(".json"), let line = Self.trailingCommaLine(text) {
            throw .invalidFile(path, "line \(line): a comma before a closing bracket (JSON allows none; YAML files may use .yaml)")
        }
        let root: Yams.Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw .invalidFile(path, Self.describe(error))
        }
        let tree: Any
        switch root {
        case nil:
            tree = [String: Any]()
        case .mapping?:
            tree = try Self.value(of: root!, path: path, key: "")
        default:
            throw .invalidFile(path, "expected a mapping of keys at the top (rtmpPort: 1935)")
        }
        guard let object = tree as? [String: Any] else { throw .invalidFile(path, "expected a mapping of keys at the top") }
        file = try NodeConfigurationFile.decode(object, path: path)
        var values: [String: ConfigContent] = [:]
        Self.flatten(object, prefix: "", into: &values)
        self.values = values
    }

    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        let name = key.components.joined(separator: ".")
        guard let content = values[name] else { return LookupResult(encodedKey: name, value: nil) }
        // Secrets are masked where a value is printed (`ResolvedConfiguration`).
        return LookupResult(encodedKey: name, value: ConfigValue(try Self.convert(content, to: type, key: name, path: path), isSecret: false))
    }

    var description: String { "\(providerName)[\(path)]" }
    var debugDescription: String { description }

    /// The content as the type asked for; a whole number is also a number.
    private static func convert(_ content: ConfigContent, to type: ConfigType, key: String, path: String) throws(ConfigurationError) -> ConfigContent {
        switch (content, type) {
        case (.string, .string), (.int, .int), (.double, .double), (.bool, .bool),
             (.stringArray, .stringArray), (.intArray, .intArray), (.doubleArray, .doubleArray), (.boolArray, .boolArray):
            return content
        case (.int(let whole), .double):
            return .double(Double(whole))
        case (.intArray(let whole), .doubleArray):
            return .doubleArray(whole.map(Double.init))
        default:
            throw .invalidFile(path, "'\(key)': expected \(type.rawValue), got \(content)")
        }
    }

    // MARK: The tree

    /// A Yams node as the Foundation values `JSONSerialization` writes (so `Codable` decodes
    /// them): scalars typed by YAML's core schema, quoted scalars always strings.
    private static func value(of node: Yams.Node, path: String, key: String) throws(ConfigurationError) -> Any {
        switch node {
        case .scalar(let scalar):
            switch Tag.Name(rawValue: node.tag.rawValue) {
            case .null: return NSNull()
            case .bool: return Bool.construct(from: scalar) ?? scalar.string
            case .int: return Int.construct(from: scalar) ?? scalar.string
            case .float:
                guard let number = Double.construct(from: scalar), number.isFinite else {
                    throw .invalidFile(path, "'\(key)': expected a finite number, got '\(scalar.string.prefix(40))'")
                }
                return number
            default: return scalar.string
            }
        case .sequence(let sequence):
            var array: [Any] = []
            for (index, element) in sequence.enumerated() {
                array.append(try value(of: element, path: path, key: "\(key)[\(index)]"))
            }
            return array
        case .mapping(let mapping):
            var object: [String: Any] = [:]
            for (name, element) in mapping {
                guard case .scalar(let scalar) = name else {
                    throw .invalidFile(path, "line \((name.mark?.line).map(String.init) ?? "?"): a key must be a plain name")
                }
                let child = key.isEmpty ? scalar.string : "\(key).\(scalar.string)"
                object[scalar.string] = try value(of: element, path: path, key: child)
            }
            return object
        case .alias:
            throw .invalidFile(path, "'\(key)': YAML aliases are not accepted")
        }
    }

    /// Scalars and arrays of scalars under their dotted keys; objects in arrays are left to
    /// the decoded `file`.
    private static func flatten(_ object: [String: Any], prefix: String, into values: inout [String: ConfigContent]) {
        for (name, value) in object {
            let key = prefix.isEmpty ? name : "\(prefix).\(name)"
            switch value {
            case let nested as [String: Any]: flatten(nested, prefix: key, into: &values)
            case let bool as Bool: values[key] = .bool(bool)
            case let int as Int: values[key] = .int(int)
            case let double as Double: values[key] = .double(double)
            case let string as String: values[key] = .string(string)
            case let array as [Any]:
                if let strings = array as? [String] { values[key] = .stringArray(strings) }
                else if let ints = array as? [Int] { values[key] = .intArray(ints) }
                else if let doubles = array as? [Double] { values[key] = .doubleArray(doubles) }
            default: break
            }
        }
    }

    /// The line of the first `,` followed (after blanks) by `}` or `]`, outside strings.
    static func trailingCommaLine(_ text: String) -> Int? {
        var line = 1
        var inString = false
        var escaped = false
        var commaLine: Int?
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\n") { line += 1 }
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true; commaLine = nil
            case UInt8(ascii: ","): commaLine = line
            case UInt8(ascii: "}"), UInt8(ascii: "]"): if let commaLine { return commaLine }
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): break
            default: commaLine = nil
            }
        }
        return nil
    }

    /// Yams's error as one line: where, and what.
    private static func describe(_ error: any Error) -> String {
        guard let error = error as? YamlError else { return "\(error)" }
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            let hint = problem.contains("cannot start any token") ? " (a tab? YAML indents with spaces)" : ""
            return "line \(mark.line) column \(mark.column): \(problem)\(hint)"
        case .duplicatedKeysInMapping(let duplicates, let context):
            return "line \(context.mark.line): duplicate key '\(duplicates.first ?? "?")'"
        case .reader(let problem, _, _, _):
            return problem
        default:
            return "\(error)"
        }
    }
}
