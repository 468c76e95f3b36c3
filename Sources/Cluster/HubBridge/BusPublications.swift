import Logging
import Media

/// The ingest's publications on the cluster bus: one `BusPublication` per live hub,
/// created when its first publisher is accepted and kept across publisher reconnects
/// (the hub, and so the bus subject's sequence, stays the same).
public actor BusPublications {
    private let bus: any Bus
    private let logger: Logger
    /// Ended hubs' publications (and their GOP-responder subscriptions) are dropped at the
    /// next `attach`, not when the hub ends: a hub has no end callback to prune from. That
    /// is bounded: every hub published here passes through `attach`, so between two calls
    /// hubs can only end, and the table never holds more than the most hubs live at once.
    private var publications: [ObjectIdentifier: (hub: StreamHub, publication: BusPublication)] = [:]

    public init(bus: any Bus, logger: Logger) {
        self.bus = bus
        self.logger = logger
    }

    /// Starts forwarding `hub` (on its rendition's subject) unless it already is.
    public func attach(_ hub: StreamHub) {
        // Hubs that ended have said so on the bus already; forget them.
        for (id, entry) in publications where entry.hub.isEnded {
            entry.publication.cancel()
            publications[id] = nil
        }
        let id = ObjectIdentifier(hub)
        guard publications[id] == nil else { return }
        do {
            let publication = try BusPublication(hub: hub, bus: bus, logger: logger)
            publications[id] = (hub, publication)
            logger.info("publishing to the bus", metadata: ["stream": "\(hub.path)", "subject": "\(publication.subject)"])
        } catch {
            logger.error("cannot publish to the bus", metadata: ["stream": "\(hub.path)", "error": "\(error)"])
        }
    }

    /// Live publications.
    public var count: Int { publications.values.filter { !$0.hub.isEnded }.count }
}
