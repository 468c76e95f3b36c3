import Media
import NIOCore
import Testing

@testable import Cluster

/// The cluster's one-publisher check on the bus: what crosses it, and what a payload that is
/// not one (a GOP request, a newer node's verdict, a GOP reply from an older node) means.
@Suite struct MediaBusPublisherCheckTests {
    @Test func theRequestCarriesTheAskerAndTheOwnersDigestAndTheReplyRoundTrips() throws {
        let request = MediaBusPublisherCheck.encodeRequest(owner: "key:secret", asker: 0x0102_0304_0506_0708)
        #expect(request.readableBytes == 44)
        #expect(!String(decoding: request.readableBytesView, as: UTF8.self).contains("secret"))
        let decoded = try #require(MediaBusPublisherCheck.decodeRequest(request))
        #expect(decoded.asker == 0x0102_0304_0506_0708)
        #expect(decoded.digest == MediaBusPublisherCheck.digest(of: "key:secret"))
        // A GOP request (empty), or anything else, is not a check.
        #expect(MediaBusPublisherCheck.decodeRequest(ByteBuffer()) == nil)
        #expect(MediaBusPublisherCheck.decodeRequest(ByteBuffer(bytes: [UInt8](repeating: 0, count: 44))) == nil)

        for answer: StreamHub.AttachResult in [.attached(replacedIdle: true), .busy(idleFor: .milliseconds(1234)), .notOwner] {
            let reply = MediaBusPublisherCheck.reply(for: answer)
            #expect(MediaBusPublisherCheck.decode(MediaBusPublisherCheck.encode(reply)) == reply)
        }
        #expect(MediaBusPublisherCheck.reply(for: .busy(idleFor: .milliseconds(1234))) == .init(verdict: .busy, idleMilliseconds: 1234))
        #expect(MediaBusPublisherCheck.decode(ByteBuffer(bytes: [9, 0, 0, 0, 0])) == nil)
        #expect(MediaBusPublisherCheck.decode(ByteBuffer(bytes: [1, 0, 0])) == nil)
        let subject = try MediaBusSubject(path: StreamPath(app: "live", name: "cam"), rendition: "src")
        #expect(MediaBusPublisherCheck.subject(for: subject) == MediaBusGOP.subject(for: subject))
    }
}
