import NIOCore

/// An Enhanced RTMP v2 multitrack audio tag (`AudioPacketType.Multitrack`, 5), split into one
/// ordinary single-track tag body per track. FFmpeg 8 sends a publisher's second and later
/// audio streams so (`0x95 0x00 'mp4a' 01 …`), beside the first as ordinary tags.
///
/// Layout (enhanced-rtmp-v2, "Multitrack"): `[SoundFormat=9 4][PacketType=5 4]`,
/// `[AvMultitrackType 4][inner AudioPacketType 4]`, the FourCC unless every track names its
/// own, then per track: [FourCC (ManyTracksManyCodecs)] trackId UI8 [size UI24 (not
/// OneTrack)] and the track's body.
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
        var sharedFourCC: UInt32?
        if multitrackType != 2 {
            guard let fourCC = buffer.readInteger(as: UInt32.self) else { throw .truncated(needed: 4, available: buffer.readableBytes) }
            sharedFourCC = fourCC
        }
        var tracks: [Track] = []
        while buffer.readableBytes > 0 {
            guard tracks.count < MultitrackVideoTag.maxTracks else { throw .payloadTooLarge(tracks.count) }
            let fourCC: UInt32
            if let sharedFourCC {
                fourCC = sharedFourCC
            } else {
                guard let own = buffer.readInteger(as: UInt32.self) else { throw .truncated(needed: 4, available: buffer.readableBytes) }
                fourCC = own
            }
            guard let codec = AudioCodec(fourCC: fourCC) else { throw .unsupportedAudioFourCC(fourCC) }
            guard let trackID = buffer.readInteger(as: UInt8.self) else { throw .truncated(needed: 1, available: 0) }
            let size: Int
            if multitrackType == 0 {
                size = buffer.readableBytes  // OneTrack: the rest of the tag
            } else {
                guard let high = buffer.readInteger(as: UInt8.self), let low = buffer.readInteger(as: UInt16.self) else {
                    throw .truncated(needed: 3, available: buffer.readableBytes)
                }
                size = Int(high) << 16 | Int(low)
            }
            guard size <= buffer.readableBytes, var body = buffer.readSlice(length: size) else {
                throw .truncated(needed: size, available: buffer.readableBytes)
            }
            var out = allocator.buffer(capacity: body.readableBytes + 5)
            if codec == .aac, packetType <= 1 {
                out.writeBytes([0xAF, packetType])
            } else {
                out.writeInteger(0x90 | packetType)
                out.writeInteger(fourCC)
            }
            out.writeBuffer(&body)
            tracks.append(Track(trackID: trackID, payload: out))
            if multitrackType == 0 { break }
        }
        self.tracks = tracks
    }
}
