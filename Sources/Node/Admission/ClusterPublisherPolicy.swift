import Cluster
import Ingest
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
struct ClusterPublisherPolicy: AdmissionPolicy {
    let publications: BusPublications

    func check(_ request: PublishRequest) async -> PolicyRefusal? {
        let owner = PublishAdmission.owner(query: request.query, remoteAddress: request.remoteAddress)
        guard let reply = await publications.checkPublisherElsewhere(request.path, owner: owner) else { return nil }
        switch reply.verdict {
        case .free:
            return nil
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
}
