import Relay
import Session

/// Segments every stream published here for HLS from its first frame (a node that both
/// ingests and plays): the first HLS viewer finds a window of segments ready.
struct HLSSegmenting: SessionObserver {
    let hls: HLSService

    func observe(_ event: SessionEvent) async {
        guard case .publishStarted(let session) = event else { return }
        await hls.attach(session.hub)
    }
}
