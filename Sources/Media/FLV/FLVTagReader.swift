import NIOCore

/// Reads FLV tags incrementally from bytes as they arrive: an FLV file or HTTP-FLV body
/// (file header, PreviousTagSize0, then tags), or a bare run of tags as `FLVTagEncoder`
/// writes them (each tag followed by its PreviousTagSize).
///
/// `nextTag(from:)` consumes only complete units and returns nil when it needs more bytes,
/// so it can be called again after appending to the same buffer. The tag size limit is
/// checked from the header, before any body is buffered. Every PreviousTagSize is checked.
public struct FLVTagReader: Sendable {
    /// The default body limit: 16 MiB - 1, everything a 24-bit DataSize can express.
    /// Callers reading untrusted input should lower it to their message-size limit.
    public static let defaultMaxTagSize = FLVTagHeader.maxDataSize

    private enum State: Sendable {
        /// Expecting the 9-byte file header.
        case fileHeader
        /// Expecting `skip` header bytes past the first 9 (when DataOffset > 9), then PreviousTagSize0.
        case previousTagSize0(skip: Int)
        /// Expecting a tag header, body and PreviousTagSize.
        case tag
    }

    public let maxTagSize: Int
    private var state: State
    /// The file header, once read.
    public private(set) var fileHeader: FLVFileHeader?

    /// - Parameters:
    ///   - maxTagSize: the largest tag body accepted, in bytes.
    ///   - expectsFileHeader: true for a file or HTTP-FLV body, false for bare tags.
    public init(maxTagSize: Int = FLVTagReader.defaultMaxTagSize, expectsFileHeader: Bool = true) {
        self.maxTagSize = maxTagSize
        self.state = expectsFileHeader ? .fileHeader : .tag
    }

    /// The next complete tag in `buffer`, or nil when more bytes are needed.
    public mutating func nextTag(from buffer: inout ByteBuffer) throws(FLVError) -> FLVTag? {
        while true {
            switch state {
            case .fileHeader:
                guard buffer.readableBytes >= FLVFileHeader.encodedLength else { return nil }
                let header = try FLVFileHeader(from: &buffer)
                fileHeader = header
                state = .previousTagSize0(skip: Int(header.dataOffset) - FLVFileHeader.encodedLength)

            case .previousTagSize0(let skip):
                guard buffer.readableBytes >= skip + 4 else { return nil }
                buffer.moveReaderIndex(forwardBy: skip)
                let previousTagSize = buffer.readInteger(as: UInt32.self) ?? 0
                guard previousTagSize == 0 else {
                    throw .previousTagSizeMismatch(expected: 0, actual: previousTagSize)
                }
                state = .tag

            case .tag:
                guard buffer.readableBytes >= FLVTagHeader.encodedLength else { return nil }
                var peek = buffer
                let header = try FLVTagHeader(from: &peek)
                let dataSize = Int(header.dataSize)
                guard dataSize <= maxTagSize else {
                    throw .tagTooLarge(size: dataSize, limit: maxTagSize)
                }
                guard let body = peek.readSlice(length: dataSize),
                      let previousTagSize = peek.readInteger(as: UInt32.self)
                else {
                    return nil
                }
                let expected = UInt32(FLVTagHeader.encodedLength + dataSize)
                guard previousTagSize == expected else {
                    throw .previousTagSizeMismatch(expected: expected, actual: previousTagSize)
                }
                buffer.moveReaderIndex(to: peek.readerIndex)
                return FLVTag(header: header, body: body)
            }
        }
    }
}
