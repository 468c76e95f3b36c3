import NIOCore

/// An Enhanced RTMP v2 multitrack audio tag (`AudioPacketType.Multitrack`, 5), split into one
/// ordinary single-track tag body per track. FFmpeg 8 sends a publisher's second and later
/// audio streams so (`0x95 0x00 'mp4a' 01 …`), beside the first as ordinary tags.
///
/// Layout (enhanced-rtmp-v2, "Multitrack"): `[SoundFormat=9 4][PacketType=5 4]`,
/// `[AvMultitrackType 4][inner AudioPacketType 4]`, then the tracks as in a video tag
/// (`MultitrackLayout`).
///
/// Each track's tag is rewritten: AAC SequenceStart and CodedFrames as legacy AAC tags
/// (`0xAF 0x00 …`, `0xAF 0x01 …`, which every player reads), anything else as a single-track
/// enhanced tag (`0x91 'Opus' …`).
public struct MultitrackAudioTag: Sendable {
    public typealias Track = MultitrackVideoTag.Track

    public var tracks: [Track]

    /// Whether `payload` is a multitrack audio tag (ExHeader, AudioPacketType 5).
    public static func isMultitrack(_ payload: ByteBuffer) -> Bool {
        guard let first = payload.getInteger(at: payload.readerIndex, as: UInt8.self) else { return false }
        return first == 0x95
    }

    public init(_ payload: ByteBuffer, allocator: ByteBufferAllocator = ByteBufferAllocator()) throws(FLVError) {
        var buffer = payload
        let available = payload.readableBytes
        guard buffer.readInteger(as: UInt8.self) == 0x95, let second = buffer.readInteger(as: UInt8.self) else {
            throw .truncated(needed: 2, available: available)
        }
        let multitrackType = second >> 4
        let packetType = second & 0x0F
        // SequenceStart, CodedFrames, SequenceEnd, MultichannelConfig; not a nested multitrack.
        guard [0, 1, 2, 4].contains(packetType) else { throw .unsupportedAudioPacketType(packetType) }
        guard multitrackType <= 2 else { throw .invalidAudioPacketType(second) }
        var tracks: [Track] = []
        for var part in try MultitrackLayout.parts(of: &buffer, multitrackType: multitrackType) {
            guard let codec = AudioCodec(fourCC: part.fourCC) else { throw .unsupportedAudioFourCC(part.fourCC) }
            var out = allocator.buffer(capacity: part.body.readableBytes + 5)
            if codec == .aac, packetType <= 1 {
                out.writeBytes([0xAF, packetType])
            } else {
                out.writeInteger(0x90 | packetType)
                out.writeInteger(part.fourCC)
            }
            out.writeBuffer(&part.body)
            tracks.append(Track(trackID: part.trackID, payload: out))
        }
        self.tracks = tracks
    }
}
