import Metrics

/// Counters of the node's own policies. Labels have bounded cardinality (no stream names).
enum NodeMetrics {
    /// Publishes refused by the node's policy before admission (rendition names, transcode capacity), by reason.
    static func refusedPublishes(reason: String) {
        Counter(label: "estuary_publishes_refused_total", dimensions: [("reason", reason)]).increment()
    }

    /// Plays refused by the node's policy before playback (a drain), by reason.
    static func refusedPlays(reason: String) {
        Counter(label: "estuary_plays_refused_total", dimensions: [("reason", reason)]).increment()
    }

    /// Publishes and plays refused because no admission decision came within the timeout
    /// (`TimeLimitedAdmission`), by kind; also counted as refused with reason `admission_timeout`.
    static func admissionTimeouts(kind: String) {
        Counter(label: "estuary_admission_timeouts_total", dimensions: [("kind", kind)]).increment()
        if kind == "publish" {
            refusedPublishes(reason: "admission_timeout")
        } else {
            refusedPlays(reason: "admission_timeout")
        }
    }
}
