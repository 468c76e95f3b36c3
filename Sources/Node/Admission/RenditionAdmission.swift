import Media
import Session
import Synchronization
import Transcode

/// Where a transcoder that also plays (`--role all`) publishes its rungs: through the
/// node's admission, as sessions of protocol `transcode`, so that HLS, metrics and the
/// session table see them as they see any publisher. The admission is made after the
/// transcoder (by `ListenerAssembly`), so it is set late; until then, and on a node without
/// one, a rung is not published locally (it is still on the bus).
final class RenditionAdmission: Sendable {
    private let admission = Mutex<(any SessionAdmission)?>(nil)

    func set(_ admission: any SessionAdmission) {
        self.admission.withLock { $0 = admission }
    }

    /// The rung's session, or nil when it could not be published here.
    func publish(_ rendition: TranscodePipeline.Rendition) async -> PublishSession? {
        guard let admission = admission.withLock({ $0 }) else { return nil }
        let request = RenditionRequest(hub: rendition.hub, publisherID: rendition.publisherID, transport: .transcode, origin: "transcoder")
        guard case .accepted(let session) = await admission.publishRendition(request) else { return nil }
        return session
    }
}
