import NIOCore

// RTMP chunk headers carry 24-bit big-endian fields (timestamp, timestamp delta, message length).
extension ByteBuffer {
    /// Reads a 24-bit big-endian unsigned integer, or returns nil (consuming nothing) if fewer than 3 bytes are readable.
    mutating func readUInt24() -> UInt32? {
        guard
            let high = self.getInteger(at: self.readerIndex, as: UInt8.self),
            let middle = self.getInteger(at: self.readerIndex + 1, as: UInt8.self),
            let low = self.getInteger(at: self.readerIndex + 2, as: UInt8.self)
        else { return nil }
        self.moveReaderIndex(forwardBy: 3)
        return UInt32(high) << 16 | UInt32(middle) << 8 | UInt32(low)
    }

    /// Writes the low 24 bits of `value` big-endian.
    mutating func writeUInt24(_ value: UInt32) {
        self.writeInteger(UInt8(truncatingIfNeeded: value >> 16))
        self.writeInteger(UInt8(truncatingIfNeeded: value >> 8))
        self.writeInteger(UInt8(truncatingIfNeeded: value))
    }
}
