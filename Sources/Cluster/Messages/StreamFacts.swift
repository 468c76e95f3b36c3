/// What ffprobe would say of a published stream, as measured by the ingest: the container,
/// the codecs and their parameters, the measured frame rate and bit rates. Every field but
/// the container is optional: an audio-only stream has no video facts, and measured rates
/// appear after the first seconds.
public struct StreamFacts: Codable, Sendable, Hashable {
    /// `flv` for RTMP.
    public var container: String
    /// `h264`, `hevc`, …
    public var videoCodec: String?
    /// `High`, `Main`, `Baseline`, …
    public var videoProfile: String?
    public var width: Int?
    public var height: Int?
    /// Frames per second measured over the last seconds (not the encoder's claim).
    public var frameRate: Double?
    /// Bits per second, measured.
    public var videoBitRate: Int?
    /// `aac`, `mp3`, …
    public var audioCodec: String?
    /// Bits per second, measured.
    public var audioBitRate: Int?
    public var audioSampleRate: Int?
    public var audioChannels: Int?
    /// The renditions the publisher's encoder makes itself (Enhanced RTMP multitrack: video
    /// `track1`, `track2`, …, audio `audio1`, …), published on the bus by the ingest beside
    /// the stream; nil when there are none (and from nodes older than multitrack).
    public var tracks: [String]?

    /// The most tracks a report carries: a multitrack publisher's 7 video and 7 audio
    /// tracks besides its main ones, and room to spare.
    public static let maxTracks = 16

    public init(
        container: String = "flv", videoCodec: String? = nil, videoProfile: String? = nil,
        width: Int? = nil, height: Int? = nil, frameRate: Double? = nil, videoBitRate: Int? = nil,
        audioCodec: String? = nil, audioBitRate: Int? = nil, audioSampleRate: Int? = nil, audioChannels: Int? = nil
    ) {
        self.container = container
        self.videoCodec = videoCodec
        self.videoProfile = videoProfile
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.videoBitRate = videoBitRate
        self.audioCodec = audioCodec
        self.audioBitRate = audioBitRate
        self.audioSampleRate = audioSampleRate
        self.audioChannels = audioChannels
    }
}
