import Session

/// While the node drains, it takes no new session: publishers and viewers are told to go
/// to another node (unavailable: RTMP `…Failed`/`…Denied`, HTTP 503).
struct DrainPolicy: AdmissionPolicy {
    let drain: NodeDrain

    func check(_ request: PublishRequest) async -> PolicyRefusal? {
        refusalWithoutWaiting(request)
    }

    func check(_ request: PlayRequest) async -> PolicyRefusal? {
        refusalWithoutWaiting(request)
    }

    func refusalWithoutWaiting(_ request: PublishRequest) -> PolicyRefusal? {
        guard drain.isDraining else { return nil }
        return PolicyRefusal(.unavailable("this node is draining: publish to another node"), metric: "draining", logged: "the node is draining")
    }

    func refusalWithoutWaiting(_ request: PlayRequest) -> PolicyRefusal? {
        guard drain.isDraining else { return nil }
        return PolicyRefusal(.unavailable("this node is draining: play from another node"), metric: "draining", logged: "the node is draining")
    }
}
