import Session

/// One rule of the node's admission (`NodeAdmission.policies`): drain, stream names,
/// stream keys, capacities; webhooks and play tokens next. Each request goes through the
/// list in order until one refuses; a request every policy lets through goes to the stream's
/// owner (publish) or the playback (play), which hands out the hub.
///
/// A policy that holds something for a request it let through (a capacity slot) gives it
/// back in `withdrawn` when a later step refused the request, and in `ended` when the
/// session it admitted ends.
protocol AdmissionPolicy: Sendable {
    /// nil lets the request through to the next policy.
    func check(_ request: PublishRequest) async -> PolicyRefusal?
    /// `check` for a policy that may also rename the stream (a hook); by default, `check`.
    func verdict(_ request: PublishRequest) async -> PolicyVerdict
    func check(_ request: PlayRequest) async -> PolicyRefusal?
    /// A later step refused a publish this policy let through.
    func withdrawn(_ request: PublishRequest)
    /// The publish this policy let through was accepted.
    func admitted(_ session: PublishSession)
    /// That publisher's session ended.
    func ended(_ session: PublishSession)
    /// A refusal this policy is sure of without waiting (`SessionAdmission.refusalWithoutWaiting`):
    /// nil when it would let the request through, or cannot tell without asking anyone.
    /// Holds nothing: the request is still decided by `verdict` or `check`.
    func refusalWithoutWaiting(_ request: PublishRequest) -> PolicyRefusal?
    func refusalWithoutWaiting(_ request: PlayRequest) -> PolicyRefusal?
    /// `refusalWithoutWaiting`, or a refusal this policy is sure of after asking someone
    /// without consequences (`SessionAdmission.refusalWithoutSideEffects`): by default, only
    /// the former. A policy whose asking has consequences (a hook is told, a slot is held, a
    /// publisher elsewhere may be evicted) keeps the default.
    func refusalWithoutSideEffects(_ request: PublishRequest) async -> PolicyRefusal?
    func refusalWithoutSideEffects(_ request: PlayRequest) async -> PolicyRefusal?
    /// Whether `refusalWithoutSideEffects` would ask anyone for this request (and so may
    /// refuse more than `refusalWithoutWaiting`).
    func asksWithoutSideEffects(_ request: PublishRequest) -> Bool
    func asksWithoutSideEffects(_ request: PlayRequest) -> Bool
}

extension AdmissionPolicy {
    func check(_ request: PublishRequest) async -> PolicyRefusal? { nil }
    func verdict(_ request: PublishRequest) async -> PolicyVerdict {
        await check(request).map { .refuse($0) } ?? .pass
    }
    func check(_ request: PlayRequest) async -> PolicyRefusal? { nil }
    func withdrawn(_ request: PublishRequest) {}
    func admitted(_ session: PublishSession) {}
    func ended(_ session: PublishSession) {}
    func refusalWithoutWaiting(_ request: PublishRequest) -> PolicyRefusal? { nil }
    func refusalWithoutWaiting(_ request: PlayRequest) -> PolicyRefusal? { nil }
    func refusalWithoutSideEffects(_ request: PublishRequest) async -> PolicyRefusal? { refusalWithoutWaiting(request) }
    func refusalWithoutSideEffects(_ request: PlayRequest) async -> PolicyRefusal? { refusalWithoutWaiting(request) }
    func asksWithoutSideEffects(_ request: PublishRequest) -> Bool { false }
    func asksWithoutSideEffects(_ request: PlayRequest) -> Bool { false }
}

/// What a policy says of a publish.
enum PolicyVerdict: Sendable {
    case pass
    case refuse(PolicyRefusal)
    /// Publish under this stream name instead (same application; a valid name).
    case rename(String)
}

/// A policy's refusal: what the client is told, the metric's reason label, and the reason
/// logged (which may say more than the client is told).
struct PolicyRefusal: Sendable {
    var refusal: SessionRefusal
    /// `estuary_publishes_refused_total{reason=…}` / `estuary_plays_refused_total{reason=…}`.
    var metric: String
    var logged: String

    init(_ refusal: SessionRefusal, metric: String, logged: String) {
        self.refusal = refusal
        self.metric = metric
        self.logged = logged
    }
}
