import Ingest
import Session

/// Publishing needs the stream's key (`requireStreamKeys`), checked against the
/// coordinator's keys or the node's own (`StreamKeyVerifier`, which caches answers).
struct StreamKeyPolicy: AdmissionPolicy {
    let keys: StreamKeyVerifier

    func check(_ request: PublishRequest) async -> PolicyRefusal? {
        refusal(await keys.check(request.path, key: request.query.streamKey))
    }

    /// A missing key, or one refused moments ago (the verifier's cache).
    func refusalWithoutWaiting(_ request: PublishRequest) -> PolicyRefusal? {
        keys.decisionWithoutWaiting(request.path, key: request.query.streamKey).flatMap(refusal)
    }

    /// The full check: the coordinator is asked as the full path would ask it, and its answer
    /// fills the verifier's cache, which the admission reads next.
    func refusalWithoutSideEffects(_ request: PublishRequest) async -> PolicyRefusal? {
        await check(request)
    }

    /// A key the verifier has no answer for.
    func asksWithoutSideEffects(_ request: PublishRequest) -> Bool {
        keys.decisionWithoutWaiting(request.path, key: request.query.streamKey) == nil
    }

    private func refusal(_ decision: StreamKeyVerifier.Decision) -> PolicyRefusal? {
        guard case .refused(let why) = decision else { return nil }
        return PolicyRefusal(.denied(why), metric: "stream_key", logged: why)
    }
}
