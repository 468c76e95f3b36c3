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
    /// Every rendition's bytes together (`HLSConfiguration.maxNodeBytes`).
    public nonisolated let budget: HLSByteBudget

    public init(configuration: HLSConfiguration, group: any EventLoopGroup, logger: Logger) {
        self.configuration = configuration
        self.group = group
        self.logger = logger
        self.budget = HLSByteBudget(limit: configuration.maxNodeBytes)
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
            await self?.detached(hubID)
            active?.cancel()
            try? await Task.sleep(for: retention)
            await self?.forget(path, rendition: rendition, target: target, hubID: hubID)
        }
        return true
    }

    private func detached(_ hubID: ObjectIdentifier) {
        attachedHubs.remove(hubID)
    }

    private func forget(_ path: StreamPath, rendition: String, target: HLSRendition, hubID: ObjectIdentifier) {
        guard streams[path]?[rendition] === target else { return }
        streams[path]?[rendition] = nil
        if streams[path]?.isEmpty == true { streams[path] = nil }
    }

    public func renditions(of path: StreamPath) -> [String: HLSRendition] {
        streams[path] ?? [:]
    }
}
