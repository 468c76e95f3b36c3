import Logging
import Media
import NIOCore

/// The HLS side of the relay: one segmenter per published stream rendition, and the
/// renditions that HTTP requests read.
///
/// Segmenting starts when a stream is published (`attach`), not on the first request, so
/// the first HLS viewer finds a window of segments ready and latency is never worse than
/// the live edge (MediaMTX calls this "always remux").
public actor HLSService {
    public nonisolated let configuration: HLSConfiguration
    private let group: any EventLoopGroup
    private let logger: Logger
    private var streams: [StreamPath: [String: HLSRendition]] = [:]
    private var attachedHubs: Set<ObjectIdentifier> = []
    /// Renditions whose stream ended, kept for `endedRetention` unless the budget needs
    /// their bytes first (`relievePressure`).
    private var endedRenditions: [ObjectIdentifier: (path: StreamPath, name: String, target: HLSRendition)] = [:]
    /// What reliefs did since the last notice (logged at most once a minute).
    private var reliefSummary = (dropped: 0, trimmed: 0, freed: 0, reliefs: 0)
    private var lastReliefNotice: ContinuousClock.Instant?

    /// Renditions whose stream ended and whose windows are kept (for tests).
    var endedRenditionCount: Int { endedRenditions.count }
    /// Every rendition's bytes together (`HLSConfiguration.maxNodeBytes`).
    public nonisolated let budget: HLSByteBudget

    public init(configuration: HLSConfiguration, group: any EventLoopGroup, logger: Logger) {
        self.configuration = configuration
        self.group = group
        self.logger = logger
        self.budget = HLSByteBudget(limit: configuration.maxNodeBytes)
        budget.setRelief { [weak self] in await self?.relievePressure() }
    }

    /// Starts segmenting `hub` as its rendition of its stream (a source is rendition `src`,
    /// a rung is listed under its source's path), once per hub.
    /// Returns false when the hub was attached already.
    @discardableResult
    public func attach(_ hub: StreamHub) -> Bool {
        let hubID = ObjectIdentifier(hub)
        guard !attachedHubs.contains(hubID) else { return false }
        attachedHubs.insert(hubID)
        let path = hub.stream
        let rendition = hub.path.renditionName
        let account = budget.account()
        let target = HLSRendition(name: rendition, configuration: configuration, account: account)
        streams[path, default: [:]][rendition] = target

        let (events, continuation) = AsyncStream.makeStream(of: HLSSegmenter.Event.self)
        var logger = logger
        logger[metadataKey: "stream"] = "\(path)"
        logger[metadataKey: "rendition"] = "\(rendition)"
        let loop = group.next()
        let segmenter = NIOLoopBoundBox.makeBoxSendingValue(
            HLSSegmenter(configuration: configuration, events: continuation, logger: logger, account: account),
            eventLoop: loop
        )
        // Frames, not bytes: the segmenter muxes them itself, on its loop. It drains there,
        // so the hub's byte bound keeps a stalled segmenter from pinning media; it then
        // resumes at a keyframe.
        let active = FrameSubscription.start(on: hub, delivery: .wake { drain in
            loop.execute { segmenter.value.process(drain()) }
        })
        if active == nil {
            continuation.finish()
        }

        // Apply events to the rendition in order, then forget the stream after retention.
        let retention = configuration.endedRetention
        Task { [weak self] in
            for await event in events {
                await target.apply(event)
            }
            await target.end()
            // The hub may be attached again from now on (a relay's mirror opened anew), and
            // must be before it is freed: a new hub at the same address would otherwise be
            // taken for this one and never segmented.
            await self?.detached(hubID, ended: (path, rendition, target))
            active?.cancel()
            try? await Task.sleep(for: retention)
            await self?.forget(path, rendition: rendition, target: target)
        }
        return true
    }

    private func detached(_ hubID: ObjectIdentifier, ended: (path: StreamPath, name: String, target: HLSRendition)) {
        attachedHubs.remove(hubID)
        endedRenditions[ObjectIdentifier(ended.target)] = ended
        // Ended while the node is short: its window is the first to go.
        if budget.isUnderPressure { budget.askForRelief() }
    }

    private func forget(_ path: StreamPath, rendition: String, target: HLSRendition) {
        endedRenditions[ObjectIdentifier(target)] = nil
        guard streams[path]?[rendition] === target else { return }
        streams[path]?[rendition] = nil
        if streams[path]?.isEmpty == true { streams[path] = nil }
    }

    /// The node's HLS budget ran short (`HLSByteBudget.setRelief`). While it stays past three
    /// quarters: the windows of streams that ended go, rather than after their retention
    /// (their late players get 404 where they would have had the stream's end), then live
    /// windows are cut to three segments now rather than as each completes its next one,
    /// the largest first. Logged at most once a minute, with what the reliefs did since.
    func relievePressure() async {
        guard budget.isUnderPressure else { return }
        var dropped = 0
        var freed = 0
        for entry in Array(endedRenditions.values) {
            guard budget.isUnderPressure else { break }
            forget(entry.path, rendition: entry.name, target: entry.target)
            freed += await entry.target.discard()
            dropped += 1
        }
        var trimmed = 0
        if budget.isUnderPressure {
            var live: [(rendition: HLSRendition, bytes: Int)] = []
            for rendition in streams.values.flatMap(\.values) {
                // One whose stream ended a moment ago, not yet listed as ended: not live.
                guard await !rendition.ended else { continue }
                live.append((rendition, rendition.account.bytesHeld))
            }
            for (rendition, _) in live.sorted(by: { $0.bytes > $1.bytes }) {
                guard budget.isUnderPressure else { break }
                let given = await rendition.trimForPressure()
                freed += given
                if given > 0 { trimmed += 1 }
            }
        }
        HLSMetrics.relieved(endedRenditions: dropped, trimmedWindows: trimmed)
        reliefSummary.dropped += dropped
        reliefSummary.trimmed += trimmed
        reliefSummary.freed += freed
        reliefSummary.reliefs += 1
        let now = ContinuousClock.now
        if reliefSummary.dropped + reliefSummary.trimmed > 0, lastReliefNotice.map({ now - $0 >= .seconds(60) }) ?? true {
            logger.notice("HLS budget under pressure: windows given back", metadata: [
                "ended_renditions_dropped": "\(reliefSummary.dropped)", "windows_trimmed": "\(reliefSummary.trimmed)",
                "bytes_freed": "\(reliefSummary.freed)", "reliefs": "\(reliefSummary.reliefs)",
                "bytes_held": "\(budget.inUse)", "limit": "\(budget.limit)",
            ])
            lastReliefNotice = now
            reliefSummary = (0, 0, 0, 0)
        }
    }

    public func renditions(of path: StreamPath) -> [String: HLSRendition] {
        streams[path] ?? [:]
    }
}
