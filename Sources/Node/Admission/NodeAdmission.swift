import Ingest
import Logging
import Media
import Relay
import Session
import Synchronization
import Transcode

/// The node's one admission path, for every protocol (RTMP publish and play, HTTP-FLV and
/// HLS play; SRT and edges next). A request goes through `policies` in order (drain, stream
/// names, stream keys, capacities; `standardPolicies`), then to the stream's owner
/// (`PublishAdmission`: one publisher per stream) or the playback (`Playback`), which hand
/// out the hub. A node without publish admission (a relay) refuses publishers.
///
/// An accepted request becomes the session's handle (`PublishSession`, `PlaySession`),
/// whose start and end go to the `observers`, in order (`SessionEvent`): that is how an
/// accepted hub reaches HLS, the bus and the coordinator, and where hooks and recording will
/// attach. A publisher's start is told before this answers it.
struct NodeAdmission: SessionAdmission {
    let admission: PublishAdmission?
    let playback: Playback
    let logger: Logger
    /// In order; the first refusal answers. A reload replaces them (`policies`'s setter) for
    /// the requests that come after; each request keeps the list it started with.
    var policies: [any AdmissionPolicy] {
        get { policySet.value }
        nonmutating set { policySet.set(newValue) }
    }
    private let policySet: Reloadable<[any AdmissionPolicy]>
    /// Told of every session's start and end, in this order.
    var observers: [any SessionObserver] = []

    init(admission: PublishAdmission?, playback: Playback, logger: Logger, policies: [any AdmissionPolicy] = [], observers: [any SessionObserver] = []) {
        self.admission = admission
        self.playback = playback
        self.logger = logger
        policySet = Reloadable(policies)
        self.observers = observers
    }

    /// Tells every observer of a session's event, in order: the sink of every handle made here.
    var tellObservers: SessionEventSink {
        let observers = observers
        return { event in
            for observer in observers { await observer.observe(event) }
        }
    }

    /// The node's policies from its configuration, in the order they are asked.
    static func standardPolicies(
        drain: NodeDrain?, ladders: [String: Ladder], keys: StreamKeyVerifier?, registry: StreamRegistry?,
        maxStreams: Int?, transcodes: TranscodeSlots, tokens: TokenPolicy? = nil
    ) -> [any AdmissionPolicy] {
        var policies: [any AdmissionPolicy] = []
        if let drain { policies.append(DrainPolicy(drain: drain)) }
        if keys == nil { policies.append(RenditionNamePolicy(ladders: ladders)) }
        if let keys { policies.append(StreamKeyPolicy(keys: keys)) }
        if let tokens { policies.append(tokens) }
        if let registry, let maxStreams { policies.append(StreamCapacityPolicy(registry: registry, limit: maxStreams)) }
        policies.append(TranscodeCapacityPolicy(ladders: ladders, slots: transcodes))
        return policies
    }

    func publish(_ request: PublishRequest) async -> PublishAnswer {
        guard let admission else {
            return .refused(.badName("this node is a relay: publish to an ingest node"))
        }
        var passed: [any AdmissionPolicy] = []
        var request = request
        let policies = policies
        for policy in policies {
            switch await policy.verdict(request) {
            case .pass:
                break
            case .refuse(let refused):
                passed.forEach { $0.withdrawn(request) }
                return .refused(tell(refused, of: request))
            case .rename(let name):
                // The policy checked the name; the application stays, so what earlier policies
                // held for it (a transcode slot) still applies.
                guard let renamed = try? StreamPath(app: request.path.app, name: name) else { break }
                logger.info("publish renamed", metadata: ["stream": "\(request.path)", "as": "\(renamed)", "from": "\(request.remoteAddress)"])
                request.path = renamed
            }
            passed.append(policy)
        }
        // A takeover (or a revoked key) closes the old publisher through its protocol: its
        // session ends as taken over (a newer publisher holds the hub now) or evicted, not as
        // left.
        let taken = TakeoverNote()
        var owned = request
        let evict = request.evict
        owned.evict = {
            if let session = taken.session {
                // A newer publisher holds the hub, here or on another ingest of the cluster.
                session.noteEnding(session.hub.hasPublisher || session.hub.isHandedOver ? .takenOver : .evicted)
            }
            evict()
        }
        switch await admission.publish(owned) {
        case .accept(let hub, let id):
            let policies = policies
            let tell = tellObservers
            let session = PublishSession(
                sessionID: request.sessionID, path: request.path, hub: hub, id: id, transport: request.transport, remoteAddress: request.remoteAddress,
                requestReconnect: request.requestReconnect, query: request.query, traffic: request.traffic,
                kick: request.kick, evict: evict,
                sink: { event in
                    if case .publishEnded(let session) = event {
                        for policy in policies { policy.ended(session) }
                        await admission.unpublished(session.path, id: session.id)
                    }
                    await tell(event)
                }
            )
            taken.session = session
            policies.forEach { $0.admitted(session) }
            await session.start()
            return .accepted(session)
        case .refuse(let refusal):
            passed.forEach { $0.withdrawn(request) }
            return .refused(refusal)
        }
    }

    /// A rung the node's transcoder made: registered for playback and told to the observers
    /// (HLS segments it; the bus, the coordinator and forwards leave renditions to the
    /// transcoder). No policy is asked: its source was admitted.
    func publishRendition(_ request: RenditionRequest) async -> PublishAnswer {
        await playback.registry.register(request.hub)
        let session = PublishSession(
            path: request.hub.path.stream, hub: request.hub, id: request.publisherID, transport: request.transport,
            remoteAddress: request.origin, sink: tellObservers
        )
        await session.start()
        return .accepted(session)
    }

    /// One track of a multitrack publisher: rendition `rendition` of its stream, published
    /// into a hub of its own that players, HLS and the session table find as any rung's. No
    /// policy is asked (the publisher was admitted); the bus, the coordinator, forwards and
    /// the drain leave it to its publisher (`PublishSession.parent`). Its end leaves the hub
    /// its grace period, as a publisher's does.
    func publishTrack(of publisher: PublishSession, rendition: String) async -> PublishAnswer {
        guard let admission else { return .refused(.badName("this node is a relay: publish to an ingest node")) }
        guard let path = try? RenditionPath(stream: publisher.path, rendition: rendition) else {
            return .refused(.badName("\(rendition) is not a rendition name"))
        }
        // Owned as the publisher owns its stream (its key, else its host), so that it takes
        // its tracks back when it reconnects within the grace period.
        let owner = PublishAdmission.owner(query: publisher.query, remoteAddress: publisher.remoteAddress)
        guard let (hub, id, result) = await admission.attach(path, owner: owner, evict: {}) else {
            return .refused(.badName("\(path) is unavailable"))
        }
        guard case .attached = result else { return .refused(.badName("\(path) is already being published")) }
        let registry = admission.registry
        let tell = tellObservers
        let session = PublishSession(
            path: publisher.path, hub: hub, id: id, transport: publisher.transport, remoteAddress: publisher.remoteAddress,
            query: publisher.query, parent: publisher,
            sink: { event in
                if case .publishEnded = event { await registry.publisherLeft(path, id: id) }
                await tell(event)
            }
        )
        await session.start()
        return .accepted(session)
    }

    /// A forward of one of the node's streams: a viewer of it, told to the observers (the
    /// session table lists it with its target; the drain does not wait for it). No policy is
    /// asked: the stream was admitted and the operator configured the push.
    func playOutbound(_ request: OutboundRequest) async -> PlayAnswer {
        .accepted(PlaySession(
            hub: request.hub, transport: request.transport, remoteAddress: request.target,
            traffic: request.traffic, kick: request.kick, sink: tellObservers
        ))
    }

    func play(_ request: PlayRequest) async -> PlayAnswer {
        for policy in policies {
            if let refused = await policy.check(request) {
                return .refused(tell(refused, of: request))
            }
        }
        switch await playback.play(request) {
        case .accept(let hub):
            return .accepted(PlaySession(
                id: request.sessionID, hub: hub, transport: request.transport, remoteAddress: request.remoteAddress,
                query: request.query, traffic: request.traffic, kick: request.kick, sink: tellObservers
            ))
        case .refuse(let refusal):
            return .refused(refusal)
        }
    }
}

extension NodeAdmission {
    /// The first policy's refusal it is sure of without waiting, counted (`EarlyRefusal.count`)
    /// as `publish`'s would be when the protocol answers with it. Not logged here: a
    /// handshake costs its caller little (SRT's are datagrams), so the protocol logs it with
    /// its own rate limit. A relay refuses every publisher.
    func refusalWithoutWaiting(_ request: PublishRequest) -> EarlyRefusal? {
        guard admission != nil else {
            return EarlyRefusal(.badName("this node is a relay: publish to an ingest node"), reason: "this node is a relay")
        }
        return policies.lazy.compactMap { $0.refusalWithoutWaiting(request) }.first.map(Self.early(publish:))
    }

    func refusalWithoutWaiting(_ request: PlayRequest) -> EarlyRefusal? {
        policies.lazy.compactMap { $0.refusalWithoutWaiting(request) }.first.map(Self.early(play:))
    }

    /// `refusalWithoutWaiting`, and what the policies can refuse by asking without
    /// consequences (the coordinator of a key, a JWT's keys). The hook's policy and the
    /// cluster's one-publisher rule, whose asking has consequences, add nothing to what they
    /// refuse at once.
    func refusalWithoutSideEffects(_ request: PublishRequest) async -> EarlyRefusal? {
        guard admission != nil else { return refusalWithoutWaiting(request) }
        for policy in policies {
            if let refused = await policy.refusalWithoutSideEffects(request) { return Self.early(publish: refused) }
        }
        return nil
    }

    func refusalWithoutSideEffects(_ request: PlayRequest) async -> EarlyRefusal? {
        for policy in policies {
            if let refused = await policy.refusalWithoutSideEffects(request) { return Self.early(play: refused) }
        }
        return nil
    }

    /// Whether a policy would ask anyone for this request (a key not answered for, a JWT).
    func asksWithoutSideEffects(_ request: PublishRequest) -> Bool {
        admission != nil && policies.contains { $0.asksWithoutSideEffects(request) }
    }

    func asksWithoutSideEffects(_ request: PlayRequest) -> Bool {
        policies.contains { $0.asksWithoutSideEffects(request) }
    }

    private static func early(publish refused: PolicyRefusal) -> EarlyRefusal {
        EarlyRefusal(refused.refusal, reason: refused.logged) { NodeMetrics.refusedPublishes(reason: refused.metric) }
    }

    private static func early(play refused: PolicyRefusal) -> EarlyRefusal {
        EarlyRefusal(refused.refusal, reason: refused.logged) { NodeMetrics.refusedPlays(reason: refused.metric) }
    }

    /// A policy's refusal of a publisher: logged with its reason, counted, and what the client is told.
    private func tell(_ refused: PolicyRefusal, of request: PublishRequest) -> SessionRefusal {
        logger.notice("publish refused", metadata: [
            "stream": "\(request.path)", "from": "\(request.remoteAddress)", "protocol": "\(request.transport)", "reason": "\(refused.logged)",
        ])
        NodeMetrics.refusedPublishes(reason: refused.metric)
        return refused.refusal
    }

    private func tell(_ refused: PolicyRefusal, of request: PlayRequest) -> SessionRefusal {
        logger.notice("play refused", metadata: [
            "stream": "\(request.path)", "from": "\(request.remoteAddress)", "protocol": "\(request.transport)", "reason": "\(refused.logged)",
        ])
        NodeMetrics.refusedPlays(reason: refused.metric)
        return refused.refusal
    }
}

/// The session a takeover ends, set once the publish is accepted (the hub may evict the
/// publisher any time after).
private final class TakeoverNote: Sendable {
    private let value = Mutex<PublishSession?>(nil)

    var session: PublishSession? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
