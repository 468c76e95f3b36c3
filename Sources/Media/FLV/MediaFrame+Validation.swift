import NIOCore

extension MediaFrame {
    /// Parses the configuration record a sequence header carries (an AVC or HEVC decoder
    /// configuration record with its SPS, an AV1 `av1C` with its sequence header, an AAC
    /// AudioSpecificConfig (legacy or `mp4a`) or an `OpusHead`), so that a garbage
    /// record is refused where it enters (RTMP ingest, the cluster bus) instead of breaking
    /// every player of the stream. Returns a line for the log (`video: avc1.64001f 640x360`),
    /// or nil for frames that carry no record. Throws the parsers' errors.
    public func validatedConfigurationRecord() throws -> String? {
        guard isSequenceHeader else { return nil }
        var payload = self.payload
        switch kind {
        case .video:
            let header = try videoTagHeader()
            payload.moveReaderIndex(forwardBy: header.headerLength)
            switch header.codec {
            case .avc:
                let record = try AVCDecoderConfigurationRecord(from: payload)
                return "video: \(record.codecString) \(record.sequenceParameterSet.width)x\(record.sequenceParameterSet.height)"
            case .hevc:
                let record = try HEVCDecoderConfigurationRecord(from: payload)
                return "video: \(record.codecString)"
            case .av1:
                let record = try AV1CodecConfigurationRecord(from: payload)
                return "video: \(record.codecString) \(record.width)x\(record.height)"
            default:
                return nil
            }
        case .audio:
            let header = try audioTagHeader()
            payload.moveReaderIndex(forwardBy: header.headerLength)
            switch header.codec {
            case .aac:
                let config = try AudioSpecificConfig(from: payload)
                return "audio: \(config.codecString) \(config.sampleRate) Hz \(config.channelCount) ch"
            case .opus:
                let head = try OpusHead(from: payload)
                return "audio: opus \(OpusHead.clockRate) Hz \(head.channelCount) ch"
            default:
                return nil
            }
        case .script:
            return nil
        }
    }
}
