import Metrics
import Session

/// Sessions by kind (publish, play) and protocol: `estuary_sessions_started_total` and
/// `estuary_sessions_active`, the same for every protocol (SRT and edges' pulls included as
/// they come), beside each protocol's own counters.
struct SessionMetrics: SessionObserver {
    func observe(_ event: SessionEvent) async {
        switch event {
        case .publishStarted(let session):
            Self.started("publish", session.transport)
        case .playStarted(let session):
            Self.started("play", session.transport)
        case .playEnded(let session):
            Self.active("play", session.transport).decrement()
        case .publishEnded(let session):
            Self.active("publish", session.transport).decrement()
        }
    }

    private static func started(_ kind: String, _ transport: StreamProtocol) {
        Counter(label: "estuary_sessions_started_total", dimensions: [("kind", kind), ("protocol", transport.rawValue)]).increment()
        active(kind, transport).increment()
    }

    private static func active(_ kind: String, _ transport: StreamProtocol) -> Meter {
        Meter(label: "estuary_sessions_active", dimensions: [("kind", kind), ("protocol", transport.rawValue)])
    }
}
