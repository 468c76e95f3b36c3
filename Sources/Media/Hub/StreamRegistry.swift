import Synchronization

/// The streams this process knows, by rendition: a stream's source is published here or
/// mirrored from elsewhere, its rungs come from a transcoder.
///
/// An actor: lookups and registrations happen once per connection, never per frame.
/// A hub outlives its publisher by `publisherGrace`, so an encoder that reconnects (mobile
/// SDKs do after every network change) finds its viewers still attached.
public actor StreamRegistry {
    public nonisolated let serializers: [any FrameSerializer]
    /// What a new hub is made with; a reload (`reconfigure`) changes it for streams that
    /// start afterwards, and a live hub keeps its own.
    public nonisolated var hubConfiguration: HubConfiguration { settings.value.hub }
    /// How long a stream without a publisher keeps its viewers before it ends.
    public nonisolated var publisherGrace: Duration { settings.value.grace }
    private nonisolated let settings: Reloadable<(hub: HubConfiguration, grace: Duration)>
    private var hubs: [RenditionPath: StreamHub] = [:] {
        didSet { snapshot.withLock { $0 = hubs } }
    }
    /// `hubs` as of its last change, for a caller that cannot await (libsrt's listen
    /// callback, which must answer at once). It shares the table's storage: the copy is
    /// paid by the next change, once per publish or end, never per frame.
    private nonisolated let snapshot = Mutex<[RenditionPath: StreamHub]>([:])
    /// Bumped whenever a publisher leaves, so a grace timer knows whether it is stale.
    private var departures: [RenditionPath: UInt64] = [:]
    private var nextPublisherID: StreamHub.PublisherID = 1

    public init(serializers: [any FrameSerializer], hubConfiguration: HubConfiguration = .init(), publisherGrace: Duration = .seconds(10)) {
        self.serializers = serializers
        settings = Reloadable((hubConfiguration, publisherGrace))
    }

    /// The hub configuration and grace of streams that start from now on.
    public nonisolated func reconfigure(hubConfiguration: HubConfiguration, publisherGrace: Duration) {
        settings.set((hubConfiguration, publisherGrace))
    }

    /// Where streams not published here come from (a relay's bus), if anywhere.
    private var remoteSource: (any RemoteStreamSource)?
    /// Remote opens in flight, so that concurrent viewers of a new stream share one.
    private var opening: [RenditionPath: Task<StreamHub?, Never>] = [:]

    public func setRemoteSource(_ source: (any RemoteStreamSource)?) {
        remoteSource = source
    }

    /// The live hub for what a viewer asked for: each candidate in turn (the exact path,
    /// then an old-style rung name's rung) among local hubs first, then from the remote
    /// source, so an old rung address the relay already mirrors never costs a bus lookup.
    public func resolve(_ requested: RequestedRendition) async -> StreamHub? {
        let candidates = requested.candidates
        for candidate in candidates {
            if let hub = hub(for: candidate) {
                remoteSource?.touch(candidate)
                return hub
            }
        }
        for candidate in candidates {
            if let hub = await resolve(candidate) { return hub }
        }
        return nil
    }

    /// The live source hub of `path`, local or remote.
    public func resolve(_ path: StreamPath) async -> StreamHub? {
        await resolve(RenditionPath.source(path))
    }

    /// The live hub for `path`: a local one, or one the remote source opens for it.
    public func resolve(_ path: RenditionPath) async -> StreamHub? {
        remoteSource?.touch(path)
        if let hub = hub(for: path) {
            return hub
        }
        guard let remoteSource else { return nil }
        if let task = opening[path] {
            return await task.value
        }
        let task = Task { await remoteSource.open(path, registry: self) }
        opening[path] = task
        let hub = await task.value
        opening[path] = nil
        return hub
    }

    /// The live source hub of `path`, if any.
    public func hub(for path: StreamPath) -> StreamHub? {
        hub(for: RenditionPath.source(path))
    }

    /// Whether a live hub serves `path` here now (rungs by their old-style names too),
    /// without waiting: a stream only a remote source could open is not known.
    public nonisolated func knowsLocally(_ requested: RequestedRendition) -> Bool {
        snapshot.withLock { hubs in
            requested.candidates.contains { hubs[$0].map { !$0.isEnded } ?? false }
        }
    }

    /// The live hub for `path`, if any.
    public func hub(for path: RenditionPath) -> StreamHub? {
        guard let hub = hubs[path], !hub.isEnded else { return nil }
        return hub
    }

    /// The hub a publisher should attach to, created if needed, with a fresh publisher id.
    /// `configuration` replaces the registry's for a hub created now (a mirror of another
    /// node's hub keeps that hub's timeline, so it does not re-base jumps).
    public func hubForPublishing(_ stream: StreamPath, configuration: HubConfiguration? = nil) -> (StreamHub, StreamHub.PublisherID) {
        hubForPublishing(.source(stream), configuration: configuration)
    }

    /// The same for any rendition: a relay mirrors rungs from the bus as it mirrors sources.
    public func hubForPublishing(_ path: RenditionPath, configuration: HubConfiguration? = nil) -> (StreamHub, StreamHub.PublisherID) {
        let id = nextPublisherID
        nextPublisherID &+= 1
        if let hub = hubs[path], !hub.isEnded { return (hub, id) }
        let hub = StreamHub(path: path, serializers: serializers, configuration: configuration ?? hubConfiguration)
        hubs[path] = hub
        return (hub, id)
    }

    /// Adds a hub created elsewhere (a transcoder's rendition), so players find it by its
    /// path. Ended hubs are forgotten on the way.
    public func register(_ hub: StreamHub) {
        hubs = hubs.filter { !$0.value.isEnded }
        hubs[hub.path] = hub
    }

    /// Forgets `path` if `hub` is still the hub registered for it: a relay or transcode
    /// node calls it when it ends a mirror of another node's hub (`BusStreamSource`).
    ///
    /// Why: lookups skip ended hubs, but their entries stay until `register` or a new
    /// publish of the same path replaces them, and a relay-only node never registers, so
    /// without this it kept one ended hub per path it ever mirrored (and `streams` walked
    /// them all on every heartbeat). Identity, not the path, decides: a hub that has taken
    /// the path over since (a new mirror or publisher) stays. `departures` is left as it
    /// is: resetting a path's ticket could let an old grace timer match a later departure
    /// and end a publisher's hub before its grace period is over.
    public func forget(_ path: RenditionPath, hub: StreamHub) {
        guard let current = hubs[path], current === hub else { return }
        hubs[path] = nil
    }

    /// Every entry, ended hubs included (for tests).
    var entryCount: Int { hubs.count }

    /// Called when publisher `id` leaves `path`. If nobody publishes again within the
    /// grace period, the stream ends and its viewers are closed.
    public func publisherLeft(_ stream: StreamPath, id: StreamHub.PublisherID) {
        publisherLeft(RenditionPath.source(stream), id: id)
    }

    public func publisherLeft(_ path: RenditionPath, id: StreamHub.PublisherID) {
        // The connection usually detached already (synchronously, so a reconnect can take
        // over at once); what matters is whether anyone publishes now.
        guard let hub = hubs[path] else { return }
        hub.detachPublisher(id: id)
        guard !hub.hasPublisher else { return }
        let ticket = (departures[path] ?? 0) &+ 1
        departures[path] = ticket
        let grace = publisherGrace
        Task { [weak self] in
            try? await Task.sleep(for: grace)
            await self?.endIfAbandoned(path, ticket: ticket)
        }
    }

    private func endIfAbandoned(_ path: RenditionPath, ticket: UInt64) {
        guard departures[path] == ticket, let hub = hubs[path], !hub.hasPublisher else { return }
        hubs[path] = nil
        departures[path] = nil
        hub.end()
    }

    /// Ends every stream (graceful shutdown).
    public func endAll() {
        let all = hubs.values
        hubs.removeAll()
        departures.removeAll()
        for hub in all { hub.end() }
    }

    /// The live rendition of `stream` (its source or a rung) a viewer that decodes `codecs`
    /// can be sent, one with a publisher and the tallest H.264 one first: the fallback for a
    /// viewer that cannot decode the rendition it asked for (an HEVC source, Opus audio).
    /// Its video must be known; audio not yet known passes. Walks the table: it runs once
    /// per such play, never per frame.
    public func decodableRendition(of stream: StreamPath, for codecs: ClientCodecs) -> StreamHub? {
        hubs.lazy
            .filter { $0.key.stream == stream && !$0.value.isEnded }
            .map(\.value)
            .filter { hub in hub.videoCodec.map { codecs.decodes(video: $0, audio: hub.audioCodec) } ?? false }
            // A rendition with a publisher before one waiting out its grace period, then the
            // tallest; each rank read once (it parses the sequence header).
            .map { (hub: $0, rank: ($0.hasPublisher ? 1 : 0, $0.avcPictureHeight)) }
            .max { $0.rank < $1.rank }?.hub
    }

    /// Every live hub, sources and rungs.
    public var streams: [RenditionPath: StreamHub] { hubs.filter { !$0.value.isEnded } }
}
