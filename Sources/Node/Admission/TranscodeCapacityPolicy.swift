import Media
import Session
import Transcode

/// Streams into applications with a ladder, at most `slots.limit` at once: each starts an
/// x264 ladder. A publish holds a slot from this check; the slot is given back if a later
/// step refuses it, and when its publisher's session ends.
struct TranscodeCapacityPolicy: AdmissionPolicy {
    let ladders: [String: Ladder]
    let slots: TranscodeSlots

    func check(_ request: PublishRequest) async -> PolicyRefusal? {
        guard ladders[request.path.app] != nil, !slots.reserve(request.path) else { return nil }
        let limit = slots.limit ?? 0
        return PolicyRefusal(
            .unavailable("this node transcodes at most \(limit) streams; try again later"),
            metric: "transcode_capacity", logged: "transcoding capacity (\(limit) streams) reached"
        )
    }

    func withdrawn(_ request: PublishRequest) {
        if ladders[request.path.app] != nil { slots.cancel(request.path) }
    }

    func admitted(_ session: PublishSession) {
        if ladders[session.path.app] != nil { slots.bind(session.path, to: session.id) }
    }

    func ended(_ session: PublishSession) {
        slots.release(session.path, id: session.id)
    }
}
