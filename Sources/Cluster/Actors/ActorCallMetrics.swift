import Metrics

/// Metrics of actor calls. Labels have bounded cardinality (reasons, no actor names).
enum ActorCallMetrics {
    /// Incoming calls refused before or instead of executing, by `ActorCallRejection`.
    static func rejected(_ reason: ActorCallRejection, factory: any MetricsFactory) {
        Counter(label: "estuary_actor_calls_rejected_total", dimensions: [("reason", reason.rawValue)], factory: factory).increment()
    }
}
