extension StreamHub {
    /// The video codec of the hub's current sequence header; nil before one came (or for
    /// an audio-only stream).
    public var videoCodec: VideoCodec? {
        guard let header = configurationRecords.video else { return nil }
        return (try? header.videoTagHeader())?.codec
    }

    /// The audio codec of the hub's current audio sequence header; nil before one came, for
    /// a stream without audio, and for legacy formats without one (MP3).
    public var audioCodec: AudioCodec? {
        guard let header = configurationRecords.audio else { return nil }
        return (try? header.audioTagHeader())?.codec
    }

    /// The picture height of an H.264 hub's current sequence header, 0 where it is not known
    /// (another codec, or no header yet): how a viewer that takes H.264 only is given the
    /// best of a stream's H.264 renditions.
    public var avcPictureHeight: Int {
        guard let header = configurationRecords.video,
              let videoHeader = try? header.videoTagHeader(), videoHeader.codec == .avc,
              let record = header.codecData(from: videoHeader.headerLength),
              let configuration = try? AVCDecoderConfigurationRecord(from: record)
        else { return 0 }
        return configuration.sequenceParameterSet.height
    }
}
