import Media
import NIOCore
import Testing

@testable import Cluster

/// The cluster's one-publisher check on the bus: what crosses it, and what a reply that is
/// not one (a newer node's verdict, a short payload) means.
@Suite struct MediaBusPublisherCheckTests {
    @Test func theRequestIsTheOwnersDigestAndTheReplyRoundTrips() throws {
        let request = MediaBusPublisherCheck.encodeRequest(owner: "key:secret")
        #expect(request.readableBytes == 32)
        #expect(!String(decoding: request.readableBytesView, as: UTF8.self).contains("secret"))
        #expect(MediaBusPublisherCheck.decodeRequest(request) == MediaBusPublisherCheck.digest(of: "key:secret"))
        #expect(MediaBusPublisherCheck.decodeRequest(ByteBuffer(bytes: [1, 2, 3])) == nil)

        for answer: StreamHub.AttachResult in [.attached(replacedIdle: true), .busy(idleFor: .milliseconds(1234)), .notOwner] {
            let reply = MediaBusPublisherCheck.reply(for: answer)
            #expect(MediaBusPublisherCheck.decode(MediaBusPublisherCheck.encode(reply)) == reply)
        }
        #expect(MediaBusPublisherCheck.reply(for: .busy(idleFor: .milliseconds(1234))) == .init(verdict: .busy, idleMilliseconds: 1234))
        #expect(MediaBusPublisherCheck.decode(ByteBuffer(bytes: [9, 0, 0, 0, 0])) == nil)
        #expect(MediaBusPublisherCheck.decode(ByteBuffer(bytes: [1, 0, 0])) == nil)
        let subject = try MediaBusSubject(path: StreamPath(app: "live", name: "cam"), rendition: "src")
        #expect(MediaBusPublisherCheck.subject(for: subject) == "publisher.live.cam.src")
    }
}
