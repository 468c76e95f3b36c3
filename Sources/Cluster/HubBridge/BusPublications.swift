import Logging
import Media
import NIOCore

/// The ingest's publications on the cluster bus: one `BusPublication` per live hub,
/// created when its first publisher is accepted and kept across publisher reconnects
/// (the hub, and so the bus subject's sequence, stays the same).
public actor BusPublications {
    private let bus: any Bus
    private let logger: Logger
    /// Ended hubs' entries are dropped by an `attach`, not when the hub ends (a hub has no
    /// end callback to prune from); their GOP responders are gone already, cancelled by the
    /// publication when it sees the end, so an entry costs memory only. An attach
    /// sweeps once the table has doubled since the last sweep, so a publish costs amortized
    /// O(1) rather than a walk of every hub; the table holds at most twice the most hubs
    /// live at once (every hub published here passes through `attach`).
    private var publications: [ObjectIdentifier: (hub: StreamHub, publication: BusPublication)] = [:]
    /// The table's size at which `attach` sweeps it next.
    private var sweepAt = 64
    /// The newest publication of each rendition.
    private var byPath: [RenditionPath: ObjectIdentifier] = [:]

    /// This node's token in the cluster's publisher checks, and whether its publishers yield
    /// to their reconnections on other ingests (it drains: they were asked to go there).
    private let checks: PublisherChecks

    public init(bus: any Bus, logger: Logger, yielding: @escaping @Sendable () -> Bool = { false }) {
        self.bus = bus
        self.logger = logger
        checks = PublisherChecks(node: UInt64.random(in: 1...UInt64.max), yielding: yielding)
    }

    /// Starts forwarding `hub` (on its rendition's subject) unless it already is.
    public func attach(_ hub: StreamHub) {
        // Hubs that ended have said so on the bus already; forget them. An ended hub of
        // this very rendition goes now, whatever the table's size: its GOP responder must
        // not answer beside the new hub's.
        if publications.count >= sweepAt {
            for (id, entry) in publications where entry.hub.isEnded {
                entry.publication.cancel()
                publications[id] = nil
            }
            byPath = byPath.filter { publications[$0.value] != nil }
            sweepAt = max(64, 2 * publications.count)
        }
        if let previous = byPath[hub.path], previous != ObjectIdentifier(hub), let entry = publications[previous], entry.hub.isEnded {
            entry.publication.cancel()
            publications[previous] = nil
        }
        let id = ObjectIdentifier(hub)
        guard publications[id] == nil else { return }
        do {
            // An ingest's hubs: their timelines are their publishers' own.
            let publication = try BusPublication(hub: hub, bus: bus, logger: logger, hasOwnClock: true, checks: checks)
            publications[id] = (hub, publication)
            byPath[hub.path] = id
            logger.info("publishing to the bus", metadata: ["stream": "\(hub.path)", "subject": "\(publication.subject)"])
        } catch {
            logger.error("cannot publish to the bus", metadata: ["stream": "\(hub.path)", "error": "\(error)"])
        }
    }

    /// What the cluster's one-publisher rule found on the bus (`checkPublisherElsewhere`).
    public enum ElsewhereCheck: Sendable, Equatable {
        /// A publisher of the stream is here: this node's hub decides, as on one node.
        case decidedHere
        /// No other node answered within the timeout (a new stream, an ingest that died;
        /// with no responder NATS answers at once, and an ended hub's publication takes its
        /// responder away when it ends), or its answer was not one (an older node's GOP).
        case unanswered
        /// The ingest whose publication of the stream is live answered.
        case answered(MediaBusPublisherCheck.Reply)
    }

    /// The cluster's one-publisher rule for a publisher of `path` with credentials `owner`,
    /// about to be admitted here: what another ingest that publishes the stream answers
    /// (`MediaBusPublisherCheck`).
    public func checkPublisherElsewhere(_ path: StreamPath, owner: String, timeout: Duration = .milliseconds(500)) async -> ElsewhereCheck {
        let rendition = RenditionPath.source(path)
        if let id = byPath[rendition], let entry = publications[id], !entry.hub.isEnded, entry.hub.hasPublisher { return .decidedHere }
        guard let subject = try? MediaBusSubject(rendition),
              let reply = try? await bus.request(
                  subject: MediaBusPublisherCheck.subject(for: subject), payload: MediaBusPublisherCheck.encodeRequest(owner: owner, asker: checks.node), timeout: timeout
              ),
              let decoded = MediaBusPublisherCheck.decode(reply)
        else { return .unanswered }
        return .answered(decoded)
    }

    /// Live publications.
    public var count: Int { publications.values.filter { !$0.hub.isEnded }.count }

    /// For a hub this node has not published yet, before its first frame: when another node
    /// still publishes its rendition (an encoder that moved here from another ingest, within
    /// that one's grace period), the hub continues that node's timeline, on which the
    /// cluster's relays and transcoders are; otherwise (a new stream, or a publisher that
    /// died with its node) it starts its own, which relays re-base (`BusStreamSource`). The
    /// other node is asked for its GOP, at most `timeout`. Returns the newest timestamp
    /// continued, if any.
    @discardableResult
    public func continueTimelineFromElsewhere(_ hub: StreamHub, timeout: Duration = .milliseconds(500)) async -> Int64? {
        guard publications[ObjectIdentifier(hub)] == nil, let subject = try? MediaBusSubject(hub.path) else { return nil }
        guard let reply = try? await bus.request(subject: MediaBusGOP.subject(for: subject), payload: ByteBuffer(), timeout: timeout),
              let frames = try? MediaBusGOP.decode(reply),
              let newest = frames.lazy.filter({ !$0.isSequenceHeader && $0.kind != .script }).map(\.timestamp).max()
        else { return nil }
        // The other node's hub may have been answered by this one meanwhile: only a hub that
        // has not published here yet takes the timeline.
        guard publications[ObjectIdentifier(hub)] == nil else { return nil }
        hub.continueTimeline(after: newest)
        logger.info("continuing the timeline of another node's publication of the stream", metadata: ["stream": "\(hub.path)", "after_ms": "\(newest)"])
        return newest
    }
}
