import Cluster
import Ingest
import Media
import Session

/// One publisher per stream across a cluster's ingests: a publisher of a stream that another
/// ingest publishes is refused as it would be there (a bad name: RTMP
/// `NetStream.Publish.BadName`; an SRT caller is closed after its handshake), while that
/// ingest's publisher sends, or while the stream belongs to other credentials; otherwise it
/// is admitted, and the other ingest's idle publisher (a reconnect that reached this ingest)
/// is closed. Without it, two encoders on two ingests were both admitted, and relays flapped
/// between their timelines. Asked over the bus (`BusPublications.checkPublisherElsewhere`),
/// after every other policy, hooks included (a hook may rename the stream, and only
/// admissible publishers should ask); a stream nobody else answers for (new, or its ingest
/// died) is let through.
///
/// What the bus lets through is then claimed at the coordinator (`claim`,
/// `CoordinatorAPI.claimPublication`), which takes claims one at a time: of two encoders
/// that start the stream on two ingests within the same moment, before either ingest's
/// publication answers on the bus, one is refused. Where the other ingest answered yes it
/// has given the stream up already (its publisher closed, its hub handed over): that claim
/// takes the stream over whoever held it, or the stream would be left with no publisher
/// anywhere. A publisher this node's hub decides about claims nothing. A coordinator that
/// does not answer within `claimTimeout` lets the publisher through (live media never waits
/// on it), as the bus rule alone did.
struct ClusterPublisherPolicy: AdmissionPolicy {
    let publications: BusPublications
    /// Claims the stream at the coordinator (taking it over when the other ingest handed it
    /// over): true granted, false refused, nil unanswered.
    let claim: (@Sendable (StreamPath, _ handedOver: Bool) async -> Bool?)?

    /// How long an admission waits for the coordinator's answer to a claim.
    static let claimTimeout: Duration = .seconds(1)

    init(publications: BusPublications, claim: (@Sendable (StreamPath, _ handedOver: Bool) async -> Bool?)? = nil) {
        self.publications = publications
        self.claim = claim
    }

    func check(_ request: PublishRequest) async -> PolicyRefusal? {
        let owner = PublishAdmission.owner(query: request.query, remoteAddress: request.remoteAddress)
        let reply: MediaBusPublisherCheck.Reply
        switch await publications.checkPublisherElsewhere(request.path, owner: owner) {
        case .decidedHere: return nil
        case .unanswered: return await claimed(request, handedOver: false)
        case .answered(let answer): reply = answer
        }
        switch reply.verdict {
        case .free:
            return await claimed(request, handedOver: true)
        case .busy:
            return PolicyRefusal(
                .badName("\(request.path) is already being published"), metric: "published_elsewhere",
                logged: "another ingest's publisher of the stream sent media \(reply.idleMilliseconds) ms ago"
            )
        case .notOwner:
            return PolicyRefusal(
                .badName("\(request.path) belongs to another publisher"), metric: "published_elsewhere",
                logged: "the stream belongs to another publisher on another ingest until its grace period ends"
            )
        }
    }

    /// The coordinator's word on a publisher the bus let through.
    private func claimed(_ request: PublishRequest, handedOver: Bool) async -> PolicyRefusal? {
        guard let claim, await claim(request.path, handedOver) == false else { return nil }
        return PolicyRefusal(
            .badName("\(request.path) is already being published"), metric: "published_elsewhere",
            logged: "another ingest claimed the stream at the coordinator a moment before (two publishers starting at once)"
        )
    }
}
