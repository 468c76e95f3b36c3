import NIOCore

/// Encodes AMF0 values into a `ByteBuffer`. Encoding never fails:
/// - `.string` values longer than 65535 UTF-8 bytes are written as long strings (marker 0x0C);
/// - property names longer than 65535 UTF-8 bytes (impossible for decoded input) are cut to 65535 bytes;
/// - ECMA array counts are written from the actual property count.
public struct AMF0Encoder: Sendable {
    /// Creates an encoder.
    public init() {}

    /// Appends `value` to `buffer`.
    public func encode(_ value: AMF0Value, into buffer: inout ByteBuffer) {
        switch value {
        case .number(let number):
            buffer.writeInteger(AMF0Marker.number.rawValue)
            buffer.writeInteger(number.bitPattern)
        case .boolean(let flag):
            buffer.writeInteger(AMF0Marker.boolean.rawValue)
            buffer.writeInteger(UInt8(flag ? 1 : 0))
        case .string(let text):
            if text.utf8.count > Int(UInt16.max) {
                buffer.writeInteger(AMF0Marker.longString.rawValue)
                Self.writeLongString(text, into: &buffer)
            } else {
                buffer.writeInteger(AMF0Marker.string.rawValue)
                Self.writeShortString(text, into: &buffer)
            }
        case .object(let properties):
            buffer.writeInteger(AMF0Marker.object.rawValue)
            self.writeProperties(properties, into: &buffer)
        case .null:
            buffer.writeInteger(AMF0Marker.null.rawValue)
        case .undefined:
            buffer.writeInteger(AMF0Marker.undefined.rawValue)
        case .reference(let index):
            buffer.writeInteger(AMF0Marker.reference.rawValue)
            buffer.writeInteger(index)
        case .ecmaArray(let properties):
            buffer.writeInteger(AMF0Marker.ecmaArray.rawValue)
            buffer.writeInteger(UInt32(truncatingIfNeeded: properties.count))
            self.writeProperties(properties, into: &buffer)
        case .strictArray(let elements):
            buffer.writeInteger(AMF0Marker.strictArray.rawValue)
            buffer.writeInteger(UInt32(truncatingIfNeeded: elements.count))
            for element in elements {
                self.encode(element, into: &buffer)
            }
        case .date(let milliseconds, let timeZone):
            buffer.writeInteger(AMF0Marker.date.rawValue)
            buffer.writeInteger(milliseconds.bitPattern)
            buffer.writeInteger(timeZone)
        case .longString(let text):
            buffer.writeInteger(AMF0Marker.longString.rawValue)
            Self.writeLongString(text, into: &buffer)
        case .xmlDocument(let text):
            buffer.writeInteger(AMF0Marker.xmlDocument.rawValue)
            Self.writeLongString(text, into: &buffer)
        case .typedObject(let className, let properties):
            buffer.writeInteger(AMF0Marker.typedObject.rawValue)
            Self.writeShortString(className, into: &buffer)
            self.writeProperties(properties, into: &buffer)
        }
    }

    /// Appends each value in order.
    public func encode(_ values: [AMF0Value], into buffer: inout ByteBuffer) {
        for value in values {
            self.encode(value, into: &buffer)
        }
    }

    private func writeProperties(_ properties: [AMF0Property], into buffer: inout ByteBuffer) {
        for property in properties {
            Self.writeShortString(property.name, into: &buffer)
            self.encode(property.value, into: &buffer)
        }
        buffer.writeInteger(UInt16(0))
        buffer.writeInteger(AMF0Marker.objectEnd.rawValue)
    }

    private static func writeShortString(_ text: String, into buffer: inout ByteBuffer) {
        let bytes = text.utf8.prefix(Int(UInt16.max))
        buffer.writeInteger(UInt16(bytes.count))
        buffer.writeBytes(bytes)
    }

    private static func writeLongString(_ text: String, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt32(truncatingIfNeeded: text.utf8.count))
        buffer.writeString(text)
    }
}
