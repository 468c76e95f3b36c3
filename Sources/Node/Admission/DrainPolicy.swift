import Session

/// While the node drains, it takes no new session: publishers and viewers are told to go
/// to another node (unavailable: RTMP `…Failed`/`…Denied`, HTTP 503).
struct DrainPolicy: AdmissionPolicy {
    let drain: NodeDrain

    func check(_ request: PublishRequest) async -> PolicyRefusal? {
        guard drain.isDraining else { return nil }
        return PolicyRefusal(.unavailable("this node is draining: publish to another node"), metric: "draining", logged: "the node is draining")
    }

    func check(_ request: PlayRequest) async -> PolicyRefusal? {
        guard drain.isDraining else { return nil }
        return PolicyRefusal(.unavailable("this node is draining: play from another node"), metric: "draining", logged: "the node is draining")
    }
}
