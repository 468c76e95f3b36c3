/// Reads an HTTP-FLV response incrementally: the status line and headers, the chunked transfer
/// encoding (or an identity body), and inside it the FLV header and tag headers, reporting every
/// complete audio and video tag. Tag bodies are skipped, never copied.
struct HTTPFLVResponseParser {
    /// Response heads longer than this are rejected; real ones are a few hundred bytes.
    static let maxHeadLength = 16 * 1024

    enum ParseError: Error, Equatable, CustomStringConvertible {
        case headTooLong
        case malformedStatusLine(String)
        case status(Int)
        case malformedChunkSize
        case notFLV

        var description: String {
            switch self {
            case .headTooLong: return "HTTP response head over \(HTTPFLVResponseParser.maxHeadLength) bytes"
            case .malformedStatusLine(let line): return "malformed status line \(line.debugDescription)"
            case .status(let code): return "HTTP status \(code)"
            case .malformedChunkSize: return "malformed chunk size line"
            case .notFLV: return "body does not start with an FLV header"
            }
        }
    }

    private enum BodyState {
        case head
        /// Reading the hex size line; `digits` bounds the value to 7 hex digits (256 MiB).
        case chunkSize(value: Int, digits: Int, inExtension: Bool)
        case chunkSizeLineFeed(value: Int)
        case chunkData(remaining: Int)
        case chunkDataEnd
        case identity
        case finished
    }

    private var bodyState = BodyState.head
    private var head: [UInt8] = []
    private var flv = FLVTagScanner()

    init() {}

    /// Parses `bytes`, adding complete media tags to `arrivals`.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, into arrivals: inout MediaArrivals) throws(ParseError) {
        var index = 0
        let count = bytes.count
        // Every iteration consumes at least one byte, or finishes.
        while index < count {
            switch self.bodyState {
            case .head:
                let byte = bytes[index]
                index += 1
                self.head.append(byte)
                guard self.head.count <= Self.maxHeadLength else { throw .headTooLong }
                if byte == 0x0A, self.head.count >= 4, self.head.suffix(4).elementsEqual([0x0D, 0x0A, 0x0D, 0x0A]) {
                    try self.parseHead()
                }
            case .chunkSize(let value, let digits, let inExtension):
                let byte = bytes[index]
                index += 1
                if byte == 0x0D {
                    guard digits > 0 else { throw .malformedChunkSize }
                    self.bodyState = .chunkSizeLineFeed(value: value)
                    continue
                }
                if inExtension { continue }
                switch byte {
                case 0x20, 0x09:
                    break
                case UInt8(ascii: ";"):
                    self.bodyState = .chunkSize(value: value, digits: digits, inExtension: true)
                default:
                    guard let digit = Self.hexValue(byte), digits < 7 else { throw .malformedChunkSize }
                    self.bodyState = .chunkSize(value: value * 16 + digit, digits: digits + 1, inExtension: false)
                }
            case .chunkSizeLineFeed(let value):
                guard bytes[index] == 0x0A else { throw .malformedChunkSize }
                index += 1
                self.bodyState = value == 0 ? .finished : .chunkData(remaining: value)
            case .chunkData(let remaining):
                let take = min(remaining, count - index)
                try self.flv.feed(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + take)]), into: &arrivals)
                index += take
                self.bodyState = take == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - take)
            case .chunkDataEnd:
                // The CRLF after the chunk data; the LF ends it.
                let byte = bytes[index]
                index += 1
                if byte == 0x0A { self.bodyState = .chunkSize(value: 0, digits: 0, inExtension: false) }
            case .identity:
                try self.flv.feed(UnsafeRawBufferPointer(rebasing: bytes[index..<count]), into: &arrivals)
                index = count
            case .finished:
                index = count
            }
        }
    }

    private mutating func parseHead() throws(ParseError) {
        let text = String(decoding: self.head, as: UTF8.self)
        self.head = []
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: true)
        guard let statusLine = lines.first else { throw .malformedStatusLine("") }
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw .malformedStatusLine(String(statusLine))
        }
        guard status == 200 else { throw .status(status) }
        var chunked = false
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].lowercased()
            if name == "transfer-encoding", value.contains("chunked") { chunked = true }
        }
        self.bodyState = chunked ? .chunkSize(value: 0, digits: 0, inExtension: false) : .identity
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(byte - UInt8(ascii: "A")) + 10
        default: return nil
        }
    }
}

/// Walks an FLV byte stream (FLV specification E.2, E.4): the 9-byte file header and
/// PreviousTagSize0, then 11-byte tag headers, tag bodies and PreviousTagSize fields.
struct FLVTagScanner {
    private enum State {
        case fileHeader(seen: Int)
        case tagHeader(seen: Int)
        case tagData(remaining: Int, length: Int, type: UInt8, seen: Int)
        case previousTagSize(remaining: Int)
    }

    /// The file header plus PreviousTagSize0.
    private static let fileHeaderLength = 13
    private static let signature: [UInt8] = Array("FLV".utf8)
    private static let tagHeaderLength = 11

    private var state = State.fileHeader(seen: 0)
    private var tagHeader = [UInt8](repeating: 0, count: FLVTagScanner.tagHeaderLength)
    private var firstBodyBytes: (UInt8, UInt8) = (0, 0)

    init() {}

    mutating func feed(_ bytes: UnsafeRawBufferPointer, into arrivals: inout MediaArrivals) throws(HTTPFLVResponseParser.ParseError) {
        var index = 0
        let count = bytes.count
        // Every iteration consumes at least one byte or completes a zero-length tag body.
        while index < count || self.isEmptyTagBody {
            switch self.state {
            case .fileHeader(let seen):
                let byte = bytes[index]
                index += 1
                if seen < 3, byte != Self.signature[seen] { throw .notFLV }
                self.state = seen + 1 == Self.fileHeaderLength ? .tagHeader(seen: 0) : .fileHeader(seen: seen + 1)
            case .tagHeader(let seen):
                self.tagHeader[seen] = bytes[index]
                index += 1
                if seen + 1 < Self.tagHeaderLength {
                    self.state = .tagHeader(seen: seen + 1)
                    continue
                }
                let type = self.tagHeader[0] & 0x1F
                let length = Int(self.tagHeader[1]) << 16 | Int(self.tagHeader[2]) << 8 | Int(self.tagHeader[3])
                self.firstBodyBytes = (0, 0)
                self.state = .tagData(remaining: length, length: length, type: type, seen: 0)
            case .tagData(let remaining, let length, let type, let seen):
                if remaining == 0 {
                    arrivals.record(typeID: type, length: length, first: self.firstBodyBytes.0, second: self.firstBodyBytes.1)
                    self.state = .previousTagSize(remaining: 4)
                    continue
                }
                var seen = seen
                if seen < 2 {
                    if seen == 0 { self.firstBodyBytes.0 = bytes[index] } else { self.firstBodyBytes.1 = bytes[index] }
                    seen += 1
                    index += 1
                    self.state = .tagData(remaining: remaining - 1, length: length, type: type, seen: seen)
                    continue
                }
                let take = min(remaining, count - index)
                index += take
                self.state = .tagData(remaining: remaining - take, length: length, type: type, seen: seen)
            case .previousTagSize(let remaining):
                let take = min(remaining, count - index)
                index += take
                self.state = take == remaining ? .tagHeader(seen: 0) : .previousTagSize(remaining: remaining - take)
            }
        }
    }

    /// True when the current tag body is complete and only needs reporting (it may have no bytes).
    private var isEmptyTagBody: Bool {
        if case .tagData(0, _, _, _) = self.state { return true }
        return false
    }
}
