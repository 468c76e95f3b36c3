import NIOCore

/// Decodes AMF0 values from a `ByteBuffer`.
///
/// - Every length is checked against the bytes left before anything is read or allocated.
/// - Nesting of objects, arrays and typed objects is capped at ``maxDepth`` because decoding
///   recurses and Swift thread stacks are fixed in size.
/// - The number of values decoded from one input is capped at ``maxValues``: each decoded
///   value costs tens of bytes against the one or two it takes on the wire, so the budget, and
///   not only the message size, bounds the memory a peer can make one message cost.
/// - Strings are decoded as UTF-8; invalid sequences are replaced with U+FFFD rather than
///   rejected, because real encoders put arbitrary bytes in metadata fields (device names,
///   titles) and dropping the whole command for that would be worse. Such strings do not
///   re-encode to the same bytes.
/// - An ECMA array whose end marker is missing at the very end of the input is accepted: some
///   encoders omit it in `onMetaData`.
public struct AMF0Decoder: Sendable {
    /// The default nesting limit. Real traffic nests at most 3 or 4 levels (a command object
    /// holding an object); 32 leaves room for odd metadata while bounding recursion.
    public static let defaultMaxDepth = 32

    /// The default value budget. A `connect` holds about 15 values and OBS's `onMetaData` about
    /// 20; metadata with a keyframe index from an injected file holds a few thousand.
    public static let defaultMaxValues = 8192

    /// The deepest container nesting accepted; deeper input throws ``AMF0Error/tooDeep(limit:)``.
    public var maxDepth: Int

    /// The most values one call decodes; more throws ``AMF0Error/tooManyValues(limit:)``.
    public var maxValues: Int

    /// Creates a decoder.
    public init(maxDepth: Int = AMF0Decoder.defaultMaxDepth, maxValues: Int = AMF0Decoder.defaultMaxValues) {
        self.maxDepth = maxDepth
        self.maxValues = maxValues
    }

    /// Decodes one value. On success the reader index moves past it; on failure the buffer is unchanged.
    public func decode(from buffer: inout ByteBuffer) throws(AMF0Error) -> AMF0Value {
        var copy = buffer
        var budget = self.maxValues
        let value = try self.readValue(from: &copy, depth: 0, budget: &budget)
        buffer = copy
        return value
    }

    /// Decodes values until the buffer is empty. On failure the buffer is unchanged.
    public func decodeAll(from buffer: inout ByteBuffer) throws(AMF0Error) -> [AMF0Value] {
        var copy = buffer
        var values: [AMF0Value] = []
        var budget = self.maxValues
        while copy.readableBytes > 0 {
            values.append(try self.readValue(from: &copy, depth: 0, budget: &budget))
        }
        buffer = copy
        return values
    }

    private func readValue(from buffer: inout ByteBuffer, depth: Int, budget: inout Int) throws(AMF0Error) -> AMF0Value {
        guard budget > 0 else { throw .tooManyValues(limit: self.maxValues) }
        budget -= 1
        guard let markerByte = buffer.readInteger(as: UInt8.self) else { throw .truncated }
        guard let marker = AMF0Marker(rawValue: markerByte) else { throw .unsupportedMarker(markerByte) }
        switch marker {
        case .number:
            return .number(try Self.readDouble(from: &buffer))
        case .boolean:
            guard let byte = buffer.readInteger(as: UInt8.self) else { throw .truncated }
            return .boolean(byte != 0)
        case .string:
            return .string(try Self.readShortString(from: &buffer))
        case .object:
            return .object(try self.readProperties(from: &buffer, depth: depth + 1, lenientEnd: false, budget: &budget))
        case .null:
            return .null
        case .undefined:
            return .undefined
        case .reference:
            guard let index = buffer.readInteger(as: UInt16.self) else { throw .truncated }
            return .reference(index)
        case .ecmaArray:
            // The count is a hint only (encoders get it wrong); properties run to the end marker.
            guard buffer.readInteger(as: UInt32.self) != nil else { throw .truncated }
            return .ecmaArray(try self.readProperties(from: &buffer, depth: depth + 1, lenientEnd: true, budget: &budget))
        case .strictArray:
            guard let count = buffer.readInteger(as: UInt32.self) else { throw .truncated }
            try self.checkDepth(depth + 1)
            // Each element takes at least one byte: reject impossible counts before looping.
            guard Int(count) <= buffer.readableBytes else {
                throw .lengthExceedsInput(length: Int(count), available: buffer.readableBytes)
            }
            var elements: [AMF0Value] = []
            for _ in 0..<count {
                elements.append(try self.readValue(from: &buffer, depth: depth + 1, budget: &budget))
            }
            return .strictArray(elements)
        case .date:
            let milliseconds = try Self.readDouble(from: &buffer)
            guard let timeZone = buffer.readInteger(as: Int16.self) else { throw .truncated }
            return .date(milliseconds, timeZone: timeZone)
        case .longString:
            return .longString(try Self.readLongString(from: &buffer))
        case .xmlDocument:
            return .xmlDocument(try Self.readLongString(from: &buffer))
        case .typedObject:
            let className = try Self.readShortString(from: &buffer)
            return .typedObject(
                className: className,
                try self.readProperties(from: &buffer, depth: depth + 1, lenientEnd: false, budget: &budget)
            )
        case .objectEnd, .movieClip, .unsupported, .recordSet, .avmPlus:
            throw .unsupportedMarker(markerByte)
        }
    }

    private func checkDepth(_ depth: Int) throws(AMF0Error) {
        if depth > self.maxDepth { throw .tooDeep(limit: self.maxDepth) }
    }

    private func readProperties(
        from buffer: inout ByteBuffer,
        depth: Int,
        lenientEnd: Bool,
        budget: inout Int
    ) throws(AMF0Error) -> [AMF0Property] {
        try self.checkDepth(depth)
        var properties: [AMF0Property] = []
        while true {
            if lenientEnd && buffer.readableBytes == 0 { return properties }
            let name = try Self.readShortString(from: &buffer)
            if name.isEmpty {
                guard let next = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else {
                    if lenientEnd { return properties }
                    throw .truncated
                }
                if next == AMF0Marker.objectEnd.rawValue {
                    buffer.moveReaderIndex(forwardBy: 1)
                    return properties
                }
                if !lenientEnd { throw .missingObjectEnd(found: next) }
            }
            let value = try self.readValue(from: &buffer, depth: depth, budget: &budget)
            properties.append(AMF0Property(name, value))
        }
    }

    private static func readDouble(from buffer: inout ByteBuffer) throws(AMF0Error) -> Double {
        guard let bits = buffer.readInteger(as: UInt64.self) else { throw .truncated }
        return Double(bitPattern: bits)
    }

    private static func readShortString(from buffer: inout ByteBuffer) throws(AMF0Error) -> String {
        guard let length = buffer.readInteger(as: UInt16.self) else { throw .truncated }
        return try self.readString(from: &buffer, length: Int(length))
    }

    private static func readLongString(from buffer: inout ByteBuffer) throws(AMF0Error) -> String {
        guard let length = buffer.readInteger(as: UInt32.self) else { throw .truncated }
        return try self.readString(from: &buffer, length: Int(length))
    }

    private static func readString(from buffer: inout ByteBuffer, length: Int) throws(AMF0Error) -> String {
        guard length <= buffer.readableBytes else {
            throw .lengthExceedsInput(length: length, available: buffer.readableBytes)
        }
        // `readString` repairs invalid UTF-8 with U+FFFD (see the type's documentation).
        guard let text = buffer.readString(length: length) else { throw .truncated }
        return text
    }
}
