/// What one socket read delivered to a viewer: complete audio/video messages (RTMP) or tags
/// (HTTP-FLV), classified from the first two bytes of their FLV audio/video tag body.
struct MediaArrivals {
    /// Audio messages or tags, sequence headers included.
    var audio = 0
    /// Video messages or tags, sequence headers included.
    var video = 0
    /// True when at least one video message was a coded frame (not a sequence header).
    var sawVideoFrame = false
    /// True when at least one video coded frame was a keyframe.
    var sawKeyframe = false
    /// True when at least one audio message was a coded frame (not an AAC sequence header).
    var sawAudioFrame = false

    /// Any media at all.
    var isEmpty: Bool { self.audio == 0 && self.video == 0 }

    /// Classifies one complete message or tag. `typeID` is the RTMP message type / FLV tag type
    /// (8 audio, 9 video); `first` and `second` are the first two body bytes (0 when absent).
    mutating func record(typeID: UInt8, length: Int, first: UInt8, second: UInt8) {
        switch typeID {
        case 8:
            self.audio += 1
            // AAC (sound format 10) carries an AACPacketType byte: 0 is the sequence header.
            // Every other legacy format, and Enhanced RTMP's ExHeader audio, is a coded frame
            // unless its packet type says SequenceStart (0) or MultichannelConfig (4).
            guard length >= 2 else { return }
            if first >> 4 == 10 {
                if second == 1 { self.sawAudioFrame = true }
            } else if first >> 4 == 9 {
                let packetType = first & 0x0F
                if packetType != 0 && packetType != 4 { self.sawAudioFrame = true }
            } else {
                self.sawAudioFrame = true
            }
        case 9:
            self.video += 1
            guard length >= 2 else { return }
            let isSequenceHeader: Bool
            let isKeyframe: Bool
            if first & 0x80 != 0 {
                // Enhanced RTMP: the low nibble is the packet type (0 SequenceStart, 5 MPEG2TSSequenceStart,
                // 2 SequenceEnd, 4 Metadata); the frame type sits in bits 4...6.
                let packetType = first & 0x0F
                isSequenceHeader = packetType == 0 || packetType == 2 || packetType == 4 || packetType == 5
                isKeyframe = (first >> 4) & 0x07 == 1
            } else {
                // Legacy FLV: codec id in the low nibble; AVC (7) and HEVC (12) carry an AVCPacketType byte.
                let codec = first & 0x0F
                isSequenceHeader = (codec == 7 || codec == 12) && second != 1
                isKeyframe = first >> 4 == 1
            }
            if !isSequenceHeader {
                self.sawVideoFrame = true
                if isKeyframe { self.sawKeyframe = true }
            }
        default:
            break
        }
    }
}
