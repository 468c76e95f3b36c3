import NIOCore

/// One rendition of a stream (`src`, `720p`, …) as HLS: the window of segments of the
/// classic variant (MPEG-TS) and of the LL-HLS variant (fMP4 parts), cut at the same
/// keyframes so both share media sequence numbers.
///
/// The segmenter appends; HTTP requests read, and may wait (blocking playlist reload,
/// preload-hinted parts) until what they ask for exists. State changes once per part
/// (a few times a second), so an actor costs nothing on the media path.
public actor HLSRendition {
    public nonisolated let name: String
    public nonisolated let configuration: HLSConfiguration
    /// When the rendition was attached: requests wait for the first segment of a young one
    /// only (`isStarting`), never for one that has had time to make it and did not.
    public nonisolated let attachedAt = ContinuousClock.now

    /// Whether the rendition is new enough that its first segment may still be on its way
    /// (within the blocking timeout of its attachment).
    public nonisolated var isStarting: Bool { ContinuousClock.now - attachedAt < configuration.blockingTimeout }

    /// One LL-HLS partial segment.
    public struct Part: Sendable {
        public var duration: Double
        public var independent: Bool
        public var data: ByteBuffer
    }

    /// One media segment, in progress until `duration` is set.
    public struct Segment: Sendable {
        public var sequence: Int
        /// Which init segment (EXT-X-MAP) the fMP4 parts need.
        public var initSection: Int
        /// The first segment after a break in the stream (new codec parameters).
        public var discontinuity: Bool
        public var parts: [Part] = []
        /// The MPEG-TS segment, once complete.
        public var transportStream: ByteBuffer?
        /// Set when the segment is complete.
        public var duration: Double?
        /// Wall-clock time of the segment's first frame (EXT-X-PROGRAM-DATE-TIME), seconds since 1970.
        public var programDateTime: Double
        /// What the segmenter charged the node's HLS budget for it, given back as it leaves
        /// the window.
        var charged = 0

        var byteCount: Int { parts.reduce(0) { $0 + $1.data.readableBytes } + (transportStream?.readableBytes ?? 0) }
    }

    /// What a master playlist says of this rendition.
    public struct Description: Sendable, Equatable {
        public var codecs: [String] = []
        public var width: Int?
        public var height: Int?
        public var frameRate: Double?
        public var hasVideo = false
        public var hasAudio = false
        /// The audio's output channels (0 without audio): `CHANNELS` of an `EXT-X-MEDIA` entry.
        public var audioChannels = 0
        /// Whether the rendition has MPEG-TS segments (classic HLS); false for AV1, which
        /// only fMP4 (LL-HLS) carries.
        public var hasTransportStream = true
    }

    public private(set) var segments: [Segment] = []
    public private(set) var initSections: [Int: ByteBuffer] = [:]
    public private(set) var description = Description()
    public private(set) var ended = false
    /// Discontinuities that fell out of the window (EXT-X-DISCONTINUITY-SEQUENCE).
    public private(set) var discontinuitySequence = 0
    /// Peak and average bits per second over complete segments in the window.
    public private(set) var peakBitrate = 0
    public private(set) var averageBitrate = 0

    /// Why the segmenter gave up on an open segment (the `reason` label of
    /// `estuary_hls_segments_abandoned_total`).
    public enum AbandonReason: String, Sendable, Hashable, CaseIterable {
        /// It would have held more than `HLSConfiguration.maxOpenSegmentBytes`.
        case tooLarge = "too_large"
        /// It would have spanned more than `HLSConfiguration.maxOpenSegmentDuration`.
        case tooLong = "too_long"
        /// The node's HLS budget (`HLSConfiguration.maxNodeBytes`) had no room for its next frame.
        case nodeBudget = "node_budget"
        /// A muxer failed on a frame; segmenting starts over at the next keyframe.
        case muxerError = "muxer_error"
    }
    /// Open segments abandoned so far, by reason.
    public private(set) var abandonedSegments: [AbandonReason: Int] = [:]

    private struct Waiter {
        var id: UInt64
        var sequence: Int
        /// nil: wait for the whole segment.
        var part: Int?
        var continuation: CheckedContinuation<Bool, Never>
    }
    private var waiters: [Waiter] = []
    private var nextWaiterID: UInt64 = 0

    /// This rendition's share of the node's HLS budget, which its segmenter charges too.
    nonisolated let account: HLSByteBudget.Account

    public init(name: String, configuration: HLSConfiguration, account: HLSByteBudget.Account? = nil) {
        self.name = name
        self.configuration = configuration
        self.account = account ?? HLSByteBudget(limit: configuration.maxNodeBytes).account()
    }

    // MARK: Segmenter side

    public func setDescription(_ description: Description) {
        self.description = description
    }

    public func addInitSection(_ id: Int, data: ByteBuffer) {
        initSections[id] = data
    }

    /// Opens segment `sequence`.
    public func beginSegment(_ sequence: Int, initSection: Int, discontinuity: Bool, programDateTime: Double) {
        if let last = segments.last, last.duration == nil {
            // The segmenter abandoned it (bad input); players see a discontinuity next.
            segments.removeLast()
        }
        segments.append(Segment(sequence: sequence, initSection: initSection, discontinuity: discontinuity, programDateTime: programDateTime))
        wakeWaiters()
    }

    /// Appends a part to the open segment.
    public func addPart(_ part: Part) {
        guard !segments.isEmpty else { return }
        segments[segments.count - 1].parts.append(part)
        wakeWaiters()
    }

    /// Drops the open segment, which the segmenter gave up on (`AbandonReason`): its parts
    /// would otherwise stay until the next keyframe, which a broken publisher may never
    /// send. The segmenter starts the next segment, a discontinuity, at the next keyframe.
    /// Requests waiting on the dropped segment or its parts are answered once a newer
    /// segment begins (`has`: a sequence older than the newest is there or gone for good),
    /// or at `blockingTimeout`. Dropped for the node's budget, the window also shrinks to
    /// the shortest live window, giving back what it can before the next try.
    public func abandonSegment(reason: AbandonReason) {
        abandonedSegments[reason, default: 0] += 1
        if let last = segments.last, last.duration == nil {
            segments.removeLast()
        }
        if reason == .nodeBudget { trimWindow(to: HLSByteBudget.minimumWindow) }
        HLSMetrics.bytesHeld(account.nodeBytesInUse)
        wakeWaiters()
    }

    /// Closes the open segment with its duration and its MPEG-TS bytes; `charged` is what
    /// its segmenter charged the node's budget for it, which the window gives back.
    public func completeSegment(duration: Double, transportStream: ByteBuffer?, charged: Int = 0) {
        guard let last = segments.indices.last, segments[last].duration == nil else {
            account.release(charged)
            return
        }
        segments[last].duration = duration
        segments[last].transportStream = transportStream
        segments[last].charged = charged
        trimWindow()
        updateBitrates()
        wakeWaiters()
    }

    /// Applies one event of this rendition's segmenter (in order, as it produced them).
    func apply(_ event: HLSSegmenter.Event) {
        switch event {
        case .describe(let description): setDescription(description)
        case .initSection(let id, let data): addInitSection(id, data: data)
        case .beginSegment(let sequence, let initSection, let discontinuity, let time):
            beginSegment(sequence, initSection: initSection, discontinuity: discontinuity, programDateTime: time)
        case .part(let part): addPart(part)
        case .completeSegment(let duration, let ts, let charged): completeSegment(duration: duration, transportStream: ts, charged: charged)
        case .abandonSegment(let reason): abandonSegment(reason: reason)
        case .end: end()
        }
    }

    /// The stream ended: playlists get EXT-X-ENDLIST and every waiter is answered.
    public func end() {
        if let last = segments.indices.last, segments[last].duration == nil {
            // An open segment with no parts is dropped; one with parts cannot be completed
            // without its TS counterpart, so it is dropped too (its media is in the parts
            // already served, which players treat as ended).
            segments.removeLast()
        }
        ended = true
        wakeWaiters()
    }

    /// The node's HLS budget is short (`HLSService.relievePressure`): the window keeps the
    /// shortest live window now. Returns the bytes given back.
    func trimForPressure() -> Int {
        let before = account.bytesHeld
        trimWindow()
        updateBitrates()
        return max(0, before - account.bytesHeld)
    }

    /// The stream ended and the node's HLS budget needs its window
    /// (`HLSService.relievePressure`): every segment goes, with what it was charged, and
    /// requests still waiting are answered. Returns the bytes given back.
    func discard() -> Int {
        let before = account.bytesHeld
        for segment in segments {
            account.release(segment.charged)
        }
        segments.removeAll()
        initSections.removeAll()
        ended = true
        HLSMetrics.bytesHeld(account.nodeBytesInUse)
        wakeWaiters()
        return max(0, before - account.bytesHeld)
    }

    /// Drops the oldest complete segments past the window (the shortest live window while
    /// the node's HLS budget is under pressure, or `shortest` when given) or past the
    /// rendition's bytes.
    private func trimWindow(to shortest: Int? = nil) {
        let complete = segments.filter { $0.duration != nil }.count
        let underPressure = shortest != nil || account.isUnderPressure
        let window = underPressure ? min(configuration.windowSegments, shortest ?? HLSByteBudget.minimumWindow) : configuration.windowSegments
        var excess = complete - window
        var bytes = segments.reduce(0) { $0 + $1.byteCount }
        while let first = segments.first, first.duration != nil, excess > 0 || bytes > configuration.maxRenditionBytes {
            if first.discontinuity { discontinuitySequence += 1 }
            bytes -= first.byteCount
            account.release(first.charged)
            segments.removeFirst()
            excess -= 1
            if segments.count <= 1 { break }
        }
        let liveSections = Set(segments.map(\.initSection))
        initSections = initSections.filter { liveSections.contains($0.key) }
        HLSMetrics.bytesHeld(account.nodeBytesInUse)
    }

    private func updateBitrates() {
        let rates = segments.compactMap { segment -> Int? in
            guard let duration = segment.duration, duration > 0 else { return nil }
            // The TS bytes where there are some; the fMP4 parts' otherwise (AV1).
            let bytes = segment.transportStream?.readableBytes ?? segment.parts.reduce(0) { $0 + $1.data.readableBytes }
            return Int(Double(bytes * 8) / duration)
        }
        peakBitrate = rates.max() ?? 0
        averageBitrate = rates.isEmpty ? 0 : rates.reduce(0, +) / rates.count
    }

    // MARK: Reader side

    /// What a media playlist is made of, read at one moment (a relief may discard the
    /// window between separate reads).
    public var playlistState: (segments: [Segment], discontinuitySequence: Int, ended: Bool) {
        (segments, discontinuitySequence, ended)
    }

    /// The newest media sequence number and part index (LAST-MSN / LAST-PART).
    public var lastPosition: (sequence: Int, part: Int)? {
        for segment in segments.reversed() where !segment.parts.isEmpty {
            return (segment.sequence, segment.parts.count - 1)
        }
        return nil
    }

    /// Whether a complete segment is in the window: what a player needs to start.
    public var hasCompleteSegment: Bool { segments.contains { $0.duration != nil } }

    /// Waits (up to the blocking timeout) until a complete segment is in the window, or the
    /// stream ends. Returns whether one is.
    public func waitForCompleteSegment() async -> Bool {
        if hasCompleteSegment { return true }
        return await waitFor(sequence: segments.first?.sequence ?? 0, part: nil)
    }

    /// True when segment `sequence` (or its part `part`) exists.
    func has(sequence: Int, part: Int?) -> Bool {
        guard let segment = segments.first(where: { $0.sequence == sequence }) else {
            // Older than the newest segment counts as present: it left the window, or was
            // abandoned and skipped, and will not come. Newer does not.
            return segments.last.map { sequence < $0.sequence } ?? false
        }
        if let part { return segment.parts.count > part || segment.duration != nil }
        return segment.duration != nil
    }

    /// Waits until segment `sequence` (or its part `part`) exists, the stream ends, or
    /// the blocking timeout passes. Returns whether it exists.
    public func waitFor(sequence: Int, part: Int?) async -> Bool {
        if has(sequence: sequence, part: part) { return true }
        if ended { return false }
        let id = nextWaiterID
        nextWaiterID &+= 1
        let timeout = configuration.blockingTimeout
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            await self?.expire(id)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            waiters.append(Waiter(id: id, sequence: sequence, part: part, continuation: continuation))
        }
    }

    private func expire(_ id: UInt64) {
        guard let index = waiters.firstIndex(where: { $0.id == id }) else { return }
        waiters.remove(at: index).continuation.resume(returning: false)
    }

    private func wakeWaiters() {
        var remaining: [Waiter] = []
        for waiter in waiters {
            if has(sequence: waiter.sequence, part: waiter.part) {
                waiter.continuation.resume(returning: true)
            } else if ended {
                waiter.continuation.resume(returning: false)
            } else {
                remaining.append(waiter)
            }
        }
        waiters = remaining
    }

    public func segment(_ sequence: Int) -> Segment? {
        segments.first { $0.sequence == sequence }
    }

    public func initSection(_ id: Int) -> ByteBuffer? {
        initSections[id]
    }
}
