/// Errors thrown while decoding AMF0 (Action Message Format 0) data.
public enum AMF0Error: Error, Equatable, Sendable {
    /// The input ended in the middle of a value.
    case truncated
    /// Containers were nested deeper than the decoder's limit.
    case tooDeep(limit: Int)
    /// A marker that this implementation does not decode: MovieClip (0x04), Unsupported (0x0D),
    /// RecordSet (0x0E), AVM+ switch (0x11), or an undefined marker byte.
    case unsupportedMarker(UInt8)
    /// An object, ECMA array or typed object had an empty key not followed by the object-end marker (0x09).
    case missingObjectEnd(found: UInt8)
    /// The input holds more values (counting every container, property value and element)
    /// than the decoder's budget: a small message of many tiny values would otherwise cost
    /// tens of times its size in memory once decoded.
    case tooManyValues(limit: Int)
    /// A length field claims more bytes than are left in the input.
    case lengthExceedsInput(length: Int, available: Int)
}
