import Metrics
import Session

/// Sessions by kind (publish, play) and protocol: `estuary_sessions_started_total` and
/// `estuary_sessions_active`, and `estuary_sessions_ended_total` by why they ended
/// (`SessionEndReason.label`), the same for every protocol (SRT and edges' pulls included as
/// they come), beside each protocol's own counters.
struct SessionMetrics: SessionObserver {
    func observe(_ event: SessionEvent) async {
        switch event {
        case .publishStarted(let session) where session.parent == nil:
            Self.started("publish", session.transport)
        case .playStarted(let session):
            Self.started("play", session.transport)
        case .playEnded(let session):
            Self.ended("play", session.transport, session.endReason)
        case .publishEnded(let session) where session.parent == nil:
            Self.ended("publish", session.transport, session.endReason)
        case .publishStarted, .publishEnded:
            break  // a multitrack publisher's track: counted with its publisher
        }
    }

    private static func ended(_ kind: String, _ transport: StreamProtocol, _ reason: SessionEndReason?) {
        active(kind, transport).decrement()
        Counter(label: "estuary_sessions_ended_total", dimensions: [
            ("kind", kind), ("protocol", transport.rawValue), ("reason", (reason ?? .left).label),
        ]).increment()
    }

    private static func started(_ kind: String, _ transport: StreamProtocol) {
        Counter(label: "estuary_sessions_started_total", dimensions: [("kind", kind), ("protocol", transport.rawValue)]).increment()
        active(kind, transport).increment()
    }

    private static func active(_ kind: String, _ transport: StreamProtocol) -> Meter {
        Meter(label: "estuary_sessions_active", dimensions: [("kind", kind), ("protocol", transport.rawValue)])
    }
}
