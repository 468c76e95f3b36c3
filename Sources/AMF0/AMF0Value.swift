/// A decoded AMF0 value (AMF0 specification, section 2).
///
/// Containers keep their key order. Strings are Swift strings; see ``AMF0Decoder`` for how
/// invalid UTF-8 is treated.
public indirect enum AMF0Value: Equatable, Sendable {
    /// IEEE 754 double (marker 0x00).
    case number(Double)
    /// Boolean (marker 0x01).
    case boolean(Bool)
    /// UTF-8 string up to 65535 bytes (marker 0x02). Longer strings are encoded as long strings.
    case string(String)
    /// Anonymous object (marker 0x03), properties in wire order.
    case object([AMF0Property])
    /// Null (marker 0x05); commonly the command object of stream commands.
    case null
    /// Undefined (marker 0x06).
    case undefined
    /// Reference to an earlier complex value by index (marker 0x07). Kept as the raw index;
    /// references are not resolved.
    case reference(UInt16)
    /// Associative array (marker 0x08), properties in wire order. The count field on the wire is
    /// only a hint and is recomputed when encoding.
    case ecmaArray([AMF0Property])
    /// Dense array (marker 0x0A).
    case strictArray([AMF0Value])
    /// Date (marker 0x0B): milliseconds since the Unix epoch and a time zone field (reserved, usually 0).
    case date(Double, timeZone: Int16)
    /// UTF-8 string with a 32-bit length (marker 0x0C).
    case longString(String)
    /// XML document as a long UTF-8 string (marker 0x0F).
    case xmlDocument(String)
    /// Typed object (marker 0x10): a class name and properties.
    case typedObject(className: String, [AMF0Property])
}

extension AMF0Value {
    /// The first property named `key` of an object, ECMA array or typed object, or nil.
    public subscript(key: String) -> AMF0Value? {
        guard let properties else { return nil }
        return properties.first { $0.name == key }?.value
    }

    /// The properties of an object, ECMA array or typed object, or nil for other values.
    public var properties: [AMF0Property]? {
        switch self {
        case .object(let properties), .ecmaArray(let properties), .typedObject(_, let properties):
            return properties
        default:
            return nil
        }
    }

    /// The text of a string, long string or XML document, or nil.
    public var stringValue: String? {
        switch self {
        case .string(let text), .longString(let text), .xmlDocument(let text):
            return text
        default:
            return nil
        }
    }

    /// The number of a number value, or nil.
    public var numberValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// The value of a boolean, or nil.
    public var booleanValue: Bool? {
        if case .boolean(let flag) = self { return flag }
        return nil
    }

    /// The elements of a strict array, or nil.
    public var arrayValue: [AMF0Value]? {
        if case .strictArray(let elements) = self { return elements }
        return nil
    }

    /// True for `.null` and `.undefined`.
    public var isNullOrUndefined: Bool {
        switch self {
        case .null, .undefined: return true
        default: return false
        }
    }
}
