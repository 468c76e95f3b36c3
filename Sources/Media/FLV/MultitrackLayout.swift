import NIOCore

/// The track walk Enhanced RTMP v2 multitrack audio and video tags share, after their
/// `[AvMultitrackType 4][PacketType 4]` byte: the FourCC unless every track names its own
/// (ManyTracksManyCodecs, 2), then per track: [FourCC] trackId UI8 [size UI24, unless
/// OneTrack (0), whose body is the rest of the tag] and the body. At most
/// `MultitrackVideoTag.maxTracks` tracks.
enum MultitrackLayout {
    struct Part {
        var fourCC: UInt32
        var trackID: UInt8
        var body: ByteBuffer
    }

    static func parts(of buffer: inout ByteBuffer, multitrackType: UInt8) throws(FLVError) -> [Part] {
        var sharedFourCC: UInt32?
        if multitrackType != 2 {
            guard let fourCC = buffer.readInteger(as: UInt32.self) else { throw .truncated(needed: 4, available: buffer.readableBytes) }
            sharedFourCC = fourCC
        }
        var parts: [Part] = []
        while buffer.readableBytes > 0 {
            guard parts.count < MultitrackVideoTag.maxTracks else { throw .payloadTooLarge(parts.count) }
            let fourCC: UInt32
            if let sharedFourCC {
                fourCC = sharedFourCC
            } else {
                guard let own = buffer.readInteger(as: UInt32.self) else { throw .truncated(needed: 4, available: buffer.readableBytes) }
                fourCC = own
            }
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
            guard size <= buffer.readableBytes, let body = buffer.readSlice(length: size) else {
                throw .truncated(needed: size, available: buffer.readableBytes)
            }
            parts.append(Part(fourCC: fourCC, trackID: trackID, body: body))
            if multitrackType == 0 { break }
        }
        return parts
    }
}
