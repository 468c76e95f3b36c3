import Media
import Session
import Transcode

/// A rung is addressed as `app/name/rung`, which no publish can name. A stream called
/// `demo_480p` is a stream of its own, but its name is also the old address of the 480p rung
/// of `demo` (`RequestedRendition`), which the stream would take over for old players: on an
/// open ingest (no stream keys) such names stay refused in applications with a ladder; with
/// keys, only the key's owner can publish it (this policy is then not in the list).
struct RenditionNamePolicy: AdmissionPolicy {
    let ladders: [String: Ladder]

    func check(_ request: PublishRequest) async -> PolicyRefusal? {
        refusalWithoutWaiting(request)
    }

    func refusalWithoutWaiting(_ request: PublishRequest) -> PolicyRefusal? {
        guard let ladder = ladders[request.path.app],
              let rung = ladder.rungs.first(where: { request.path.name.hasSuffix("_\($0.name)") && request.path.name.count > $0.name.count + 1 })
        else { return nil }
        return PolicyRefusal(
            .badName("\(request.path.name) is the old address of a transcoded rung; publish it with a stream key"),
            metric: "rendition_name", logged: "the old address of a \(rung.name) rung, on an open ingest"
        )
    }
}
