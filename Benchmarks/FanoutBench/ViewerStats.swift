import ArgumentParser

/// The two kinds of simulated viewer.
enum ViewerKind: String, Sendable, Codable {
    case rtmp
    case httpFLV = "http-flv"
}

/// Which track's first coded frame counts as a viewer's first frame.
enum FirstFrameTrack: String, Sendable, Codable, CaseIterable, ExpressibleByArgument {
    /// The first video frame that is not a sequence header (the default: a player shows a picture).
    case video
    /// The first audio frame that is not a sequence header, for audio-only streams; the
    /// "keyframe" figures are then the same moment, since every audio frame stands alone.
    case audio
}

/// Everything measured about one viewer. Owned by the viewer's channel handler and by the
/// ``ViewerRegistry`` of the same event loop; touched only on that loop.
final class ViewerStats {
    /// A gap between media arrivals longer than this, after the first frame, is a stall. The
    /// source is a constant 30 fps stream with audio, so healthy gaps are tens of milliseconds.
    static let stallThresholdNanoseconds: UInt64 = 1_000_000_000

    let id: Int
    let kind: ViewerKind
    /// When the TCP connect started (`NIODeadline.uptimeNanoseconds`).
    let connectStart: UInt64
    let firstFrameTrack: FirstFrameTrack
    private(set) var firstFrame: UInt64?
    private(set) var firstKeyframe: UInt64?
    private(set) var lastMedia: UInt64?
    private(set) var stalls = 0
    private(set) var maxGapAfterFirstFrame: UInt64 = 0
    private(set) var bytes = 0
    private(set) var videoMessages = 0
    private(set) var audioMessages = 0
    private(set) var closedAt: UInt64?
    private(set) var failure: String?

    init(id: Int, kind: ViewerKind, connectStart: UInt64, firstFrameTrack: FirstFrameTrack = .video) {
        self.id = id
        self.kind = kind
        self.connectStart = connectStart
        self.firstFrameTrack = firstFrameTrack
    }

    func received(bytes count: Int) {
        self.bytes += count
    }

    func record(_ arrivals: MediaArrivals, at now: UInt64) {
        guard !arrivals.isEmpty else { return }
        self.videoMessages += arrivals.video
        self.audioMessages += arrivals.audio
        if self.firstFrame != nil, let last = self.lastMedia {
            let gap = now &- last
            if gap > Self.stallThresholdNanoseconds { self.stalls += 1 }
            self.maxGapAfterFirstFrame = max(self.maxGapAfterFirstFrame, gap)
        }
        self.lastMedia = now
        let sawFrame: Bool
        let sawKeyframe: Bool
        switch self.firstFrameTrack {
        case .video: (sawFrame, sawKeyframe) = (arrivals.sawVideoFrame, arrivals.sawKeyframe)
        case .audio: (sawFrame, sawKeyframe) = (arrivals.sawAudioFrame, arrivals.sawAudioFrame)
        }
        if self.firstFrame == nil, sawFrame { self.firstFrame = now }
        if self.firstKeyframe == nil, sawKeyframe { self.firstKeyframe = now }
    }

    func fail(_ reason: String) {
        if self.failure == nil { self.failure = reason }
    }

    func closed(at now: UInt64) {
        if self.closedAt == nil { self.closedAt = now }
    }

    func snapshot() -> ViewerSnapshot {
        ViewerSnapshot(
            id: self.id,
            kind: self.kind,
            connectStart: self.connectStart,
            firstFrame: self.firstFrame,
            firstKeyframe: self.firstKeyframe,
            lastMedia: self.lastMedia,
            stalls: self.stalls,
            maxGapAfterFirstFrame: self.maxGapAfterFirstFrame,
            bytes: self.bytes,
            videoMessages: self.videoMessages,
            audioMessages: self.audioMessages,
            closedAt: self.closedAt,
            failure: self.failure
        )
    }
}

@available(*, unavailable)
extension ViewerStats: Sendable {}

/// A copy of ``ViewerStats`` that can leave the event loop.
struct ViewerSnapshot: Sendable {
    var id: Int
    var kind: ViewerKind
    var connectStart: UInt64
    var firstFrame: UInt64?
    var firstKeyframe: UInt64?
    var lastMedia: UInt64?
    var stalls: Int
    var maxGapAfterFirstFrame: UInt64
    var bytes: Int
    var videoMessages: Int
    var audioMessages: Int
    var closedAt: UInt64?
    var failure: String?
}
