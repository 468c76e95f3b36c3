import Media
import NIOCore
import Testing

@testable import Cluster

@Suite struct MediaBusFrameHeaderTests {
    static let header = MediaBusFrameHeader(
        kind: .video, isKeyframe: true, isSequenceHeader: false,
        epoch: 0x0102_0304, sequence: 0x1122_3344_5566_7788, timestamp: -2, compositionTime: 80,
        fragmentIndex: 1, fragmentCount: 3, frameLength: 0x0030_0000
    )
    static let bytes: [UInt8] = [
        0xEB, 0x01, 0x09, 0x01,
        0x01, 0x02, 0x03, 0x04,
        0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE,
        0x00, 0x00, 0x00, 0x50,
        0x00, 0x01, 0x00, 0x03,
        0x00, 0x30, 0x00, 0x00,
    ]

    @Test func headerEncodesToTheDocumentedBytes() {
        var buffer = ByteBuffer()
        Self.header.write(into: &buffer)
        #expect(Array(buffer.readableBytesView) == Self.bytes)
        #expect(buffer.readableBytes == MediaBusFrameHeader.size)
    }

    @Test func headerDecodesFromTheDocumentedBytes() throws {
        var buffer = ByteBuffer(bytes: Self.bytes + [0xAA, 0xBB])
        let header = try MediaBusFrameHeader(from: &buffer)
        #expect(header == Self.header)
        #expect(Array(buffer.readableBytesView) == [0xAA, 0xBB])
    }

    /// Bit 3: the publication's clock is its publisher's own (an ingest's).
    @Test func theOwnClockFlagRoundTrips() throws {
        var header = Self.header
        header.hasOwnClock = true
        var buffer = ByteBuffer()
        header.write(into: &buffer)
        #expect(buffer.getInteger(at: 3, as: UInt8.self) == 0x09)
        let decoded = try MediaBusFrameHeader(from: &buffer)
        #expect(decoded.hasOwnClock && decoded == header)
    }

    @Test(arguments: [0, 1, 10, 35])
    func truncatedHeaderIsRejected(length: Int) {
        var buffer = ByteBuffer(bytes: Self.bytes.prefix(length))
        let before = buffer
        #expect(throws: MediaBusFrameError.truncated(needed: 36, available: length)) {
            try MediaBusFrameHeader(from: &buffer)
        }
        #expect(buffer == before)
    }

    @Test func wrongVersionIsRejected() {
        var bytes = Self.bytes
        bytes[1] = 2
        var buffer = ByteBuffer(bytes: bytes)
        #expect(throws: MediaBusFrameError.unsupportedVersion(2)) { try MediaBusFrameHeader(from: &buffer) }
        #expect(MediaBusFrameError.unsupportedVersion(2).reason == "version")
    }

    @Test func wrongMagicIsRejected() {
        var bytes = Self.bytes
        bytes[0] = 0x7B  // '{': someone's JSON on a media subject
        var buffer = ByteBuffer(bytes: bytes)
        #expect(throws: MediaBusFrameError.badMagic(0x7B)) { try MediaBusFrameHeader(from: &buffer) }
        var short = ByteBuffer(bytes: [0x7B, 0x22])
        #expect(throws: MediaBusFrameError.badMagic(0x7B)) { try MediaBusFrameHeader(from: &short) }
    }

    @Test(arguments: [
        (2, UInt8(7), MediaBusFrameError.unknownKind(7)),
        (3, UInt8(0x10), MediaBusFrameError.unknownFlags(0x10)),
        (31, UInt8(0), MediaBusFrameError.badFragment(index: 1, count: 0)),
        (29, UInt8(3), MediaBusFrameError.badFragment(index: 3, count: 3)),
    ])
    func malformedFieldsAreRejected(offset: Int, value: UInt8, expected: MediaBusFrameError) {
        var bytes = Self.bytes
        bytes[offset] = value
        var buffer = ByteBuffer(bytes: bytes)
        #expect(throws: expected) { try MediaBusFrameHeader(from: &buffer) }
    }
}
