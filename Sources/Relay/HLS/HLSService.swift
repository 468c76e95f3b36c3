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
    }

    private func forget(_ path: StreamPath, rendition: String, target: HLSRendition) {
        endedRenditions[ObjectIdentifier(target)] = nil
        guard streams[path]?[rendition] === target else { return }
        streams[path]?[rendition] = nil
        if streams[path]?.isEmpty == true { streams[path] = nil }
    }

    /// The node's HLS budget ran short (`HLSByteBudget.setRelief`): the windows of streams
    /// that ended go at once rather than after their retention (their late viewers get 404
    /// where they would have had the end of the stream), and, if that is not enough, every
    /// live window is cut to three segments now rather than as each completes its next one,
    /// the largest first.
    func relievePressure() async {
        let ended = Array(endedRenditions.values)
        var freed = 0
        for entry in ended {
            forget(entry.path, rendition: entry.name, target: entry.target)
            freed += await entry.target.discard()
        }
        var trimmed = 0
        if budget.isUnderPressure {
            var live: [(rendition: HLSRendition, bytes: Int)] = []
            for rendition in streams.values.flatMap(\.values) {
                live.append((rendition, rendition.account.bytesHeld))
            }
            for (rendition, _) in live.sorted(by: { $0.bytes > $1.bytes }) {
                let given = await rendition.trimForPressure()
                freed += given
                if given > 0 { trimmed += 1 }
            }
        }
        HLSMetrics.relieved(endedRenditions: ended.count, trimmedWindows: trimmed)
        if !ended.isEmpty || trimmed > 0 {
            logger.notice("HLS budget under pressure", metadata: [
                "ended_renditions_dropped": "\(ended.count)", "windows_trimmed": "\(trimmed)", "bytes_freed": "\(freed)",
                "bytes_held": "\(budget.inUse)", "limit": "\(budget.limit)",
            ])
        }
    }

    public func renditions(of path: StreamPath) -> [String: HLSRendition] {
        streams[path] ?? [:]
    }
}
