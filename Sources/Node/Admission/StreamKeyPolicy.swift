import Ingest
import Session

/// Publishing needs the stream's key (`requireStreamKeys`), checked against the
/// coordinator's keys or the node's own (`StreamKeyVerifier`, which caches answers).
struct StreamKeyPolicy: AdmissionPolicy {
    let keys: StreamKeyVerifier

    func check(_ request: PublishRequest) async -> PolicyRefusal? {
        guard case .refused(let why) = await keys.check(request.path, key: request.query.streamKey) else { return nil }
        return PolicyRefusal(.denied(why), metric: "stream_key", logged: why)
    }
}
