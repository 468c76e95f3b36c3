/// One key/value pair of an AMF0 object, ECMA array or typed object.
///
/// Objects are kept as ordered arrays of properties rather than dictionaries because key order is
/// observable on the wire (some players read `onMetaData` positionally) and duplicate keys occur
/// in the wild.
public struct AMF0Property: Sendable, Equatable {
    /// The property name (an AMF0 UTF-8 string without a marker, at most 65535 bytes on the wire).
    public var name: String
    /// The property value.
    public var value: AMF0Value

    /// Creates a property.
    public init(_ name: String, _ value: AMF0Value) {
        self.name = name
        self.value = value
    }
}
