import NIOCore

/// An Enhanced RTMP v2 multitrack video tag (`VideoPacketType.Multitrack`, 6), split into
/// one ordinary single-track tag body per track, so that each track can feed a hub of its
/// own (an encoder-made ABR ladder: OBS Enhanced Broadcasting, FFmpeg 8 with several video
/// streams) and reach players that know nothing of multitrack.
///
/// Layout (enhanced-rtmp-v2, "Multitrack"): `[IsExHeader 1][FrameType 3][PacketType=6 4]`,
/// `[AvMultitrackType 4][inner PacketType 4]`, the FourCC unless every track names its own,
/// then per track: [FourCC (ManyTracksManyCodecs)] trackId UI8 [size UI24 (not OneTrack)]
/// and the track's body. FFmpeg writes OneTrack tags, one per frame and track.
///
/// Each track's tag is rewritten: H.264 as a legacy tag (`0x17 0x01 CTS …`, which every
/// player reads), other codecs as a single-track enhanced tag (`0x91 'hvc1' CTS …`). The body
/// is copied once, at ingest; viewers share the result.
public struct MultitrackVideoTag: Sendable {
    /// One track's part of the tag.
    public struct Track: Sendable {
        public var trackID: UInt8
        /// The single-track FLV video tag body (header and data).
        public var payload: ByteBuffer
    }

    public var tracks: [Track]

    /// More tracks than one tag may carry here: a real ladder has a handful.
    public static let maxTracks = 16

    /// Whether `payload` is a multitrack video tag (enhanced, PacketType 6).
    public static func isMultitrack(_ payload: ByteBuffer) -> Bool {
        guard let first = payload.getInteger(at: payload.readerIndex, as: UInt8.self) else { return false }
        return first & 0x80 != 0 && first & 0x0F == 6
    }

    public init(_ payload: ByteBuffer, allocator: ByteBufferAllocator = ByteBufferAllocator()) throws(FLVError) {
        var buffer = payload
        let available = payload.readableBytes
        guard let first = buffer.readInteger(as: UInt8.self), let second = buffer.readInteger(as: UInt8.self) else {
            throw .truncated(needed: 2, available: available)
        }
        let frameType = (first >> 4) & 0x07
        guard VideoTagHeader.FrameType(rawValue: frameType) != nil, frameType != 5 else { throw .invalidVideoFrameType(frameType) }
        let multitrackType = second >> 4
        let packetType = second & 0x0F
        // SequenceStart, CodedFrames, SequenceEnd, CodedFramesX; not metadata, nor a nested multitrack.
        guard [0, 1, 2, 3].contains(packetType) else { throw .unsupportedVideoPacketType(packetType) }
        guard multitrackType <= 2 else { throw .invalidVideoPacketType(second) }
        var tracks: [Track] = []
        for var part in try MultitrackLayout.parts(of: &buffer, multitrackType: multitrackType) {
            guard let codec = VideoCodec(fourCC: part.fourCC) else { throw .unsupportedVideoFourCC(part.fourCC) }
            tracks.append(Track(
                trackID: part.trackID,
                payload: try Self.singleTrack(frameType: frameType, packetType: packetType, codec: codec, fourCC: part.fourCC, body: &part.body, allocator: allocator)
            ))
        }
        self.tracks = tracks
    }

    /// The single-track tag body for one track.
    static func singleTrack(frameType: UInt8, packetType: UInt8, codec: VideoCodec, fourCC: UInt32, body: inout ByteBuffer, allocator: ByteBufferAllocator) throws(FLVError) -> ByteBuffer {
        var out = allocator.buffer(capacity: body.readableBytes + 8)
        let hasCompositionTime = packetType == 1 && (codec == .avc || codec == .hevc)
        if codec == .avc {
            // Legacy AVC: [FrameType 4][CodecID 7], AVCPacketType, CTS SI24.
            let legacyPacketType: UInt8 = switch packetType {
            case 0: 0
            case 2: 2
            default: 1  // CodedFrames and CodedFramesX
            }
            out.writeInteger(frameType << 4 | 7)
            out.writeInteger(legacyPacketType)
            if hasCompositionTime {
                guard let cts = body.readSlice(length: 3) else { throw .truncated(needed: 3, available: body.readableBytes) }
                out.writeImmutableBuffer(cts)
            } else {
                out.writeBytes([0, 0, 0])
            }
        } else {
            out.writeInteger(0x80 | frameType << 4 | packetType)
            out.writeInteger(fourCC)
            if hasCompositionTime {
                guard let cts = body.readSlice(length: 3) else { throw .truncated(needed: 3, available: body.readableBytes) }
                out.writeImmutableBuffer(cts)
            }
        }
        out.writeBuffer(&body)
        return out
    }
}
