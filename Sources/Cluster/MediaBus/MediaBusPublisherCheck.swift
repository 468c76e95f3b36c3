import Crypto
import Media
import NIOCore

/// The cluster's one-publisher rule, asked over the bus: before an ingest admits a publisher
/// of a stream it has no publisher of itself, it asks whether another ingest holds the
/// stream, answered by the node whose publication of it is live, as its hub would answer a
/// second publisher there (`StreamHub.answerPublisherElsewhere`): busy while its publisher
/// sends, not the owner's while the stream belongs to other credentials, and otherwise yes,
/// evicting an idle publisher of the same owner (a reconnect that reached another ingest),
/// and a sending one of the same owner while it drains. Nobody answering (a new stream, an
/// ingest that died) is a yes.
///
/// The request goes to the rendition's GOP subject (`gop.<app>.<name>.src`), whose
/// responder every publication has already: one subscription, and one cnats delivery
/// thread, per publication, not two. A GOP request is empty; this one is 44 bytes: `PUB1`,
/// the asking node's token (UInt64, big-endian; a node does not answer its own), and the
/// SHA-256 digest of the publisher's owner (`key:…` or `address:…`: the bus carries a
/// digest, not the key). The reply is one byte, the verdict, and the publisher's idle time
/// in milliseconds (UInt32, big-endian). An older node answers with its GOP, which is not
/// a reply: a yes, as before this check.
public enum MediaBusPublisherCheck {
    public enum Verdict: UInt8, Sendable, Equatable {
        /// Nothing on the answering node holds the stream against the asker.
        case free = 0
        /// Its publisher sends: a second publisher is refused, as on one node.
        case busy = 1
        /// The stream belongs to other credentials until its grace period ends.
        case notOwner = 2
    }

    public struct Reply: Sendable, Equatable {
        public var verdict: Verdict
        public var idleMilliseconds: UInt32

        public init(verdict: Verdict, idleMilliseconds: UInt32 = 0) {
            self.verdict = verdict
            self.idleMilliseconds = idleMilliseconds
        }
    }

    static let magic: [UInt8] = Array("PUB1".utf8)
    public static let requestBytes = 4 + 8 + SHA256.byteCount

    /// The request subject for a rendition: its GOP subject.
    public static func subject(for media: MediaBusSubject) -> String {
        MediaBusGOP.subject(for: media)
    }

    /// What an owner is sent as.
    public static func digest(of owner: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(owner.utf8)))
    }

    public static func encodeRequest(owner: String, asker: UInt64) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(requestBytes)
        buffer.writeBytes(magic)
        buffer.writeInteger(asker)
        buffer.writeBytes(digest(of: owner))
        return buffer
    }

    /// The asking node and the owner's digest in a request; nil when the payload is not one
    /// (an empty one is a GOP request).
    public static func decodeRequest(_ payload: ByteBuffer) -> (asker: UInt64, digest: [UInt8])? {
        var payload = payload
        guard payload.readableBytes == requestBytes, payload.readBytes(length: 4) == magic,
              let asker = payload.readInteger(as: UInt64.self), let digest = payload.readBytes(length: SHA256.byteCount)
        else { return nil }
        return (asker, digest)
    }

    /// The reply for a hub's answer.
    public static func reply(for answer: StreamHub.AttachResult) -> Reply {
        switch answer {
        case .attached, .ended: Reply(verdict: .free)
        case .busy(let idleFor): Reply(verdict: .busy, idleMilliseconds: UInt32(clamping: Int((idleFor / .milliseconds(1)).rounded())))
        case .notOwner: Reply(verdict: .notOwner)
        }
    }

    public static func encode(_ reply: Reply) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(reply.verdict.rawValue)
        buffer.writeInteger(reply.idleMilliseconds)
        return buffer
    }

    /// A reply; nil when it is not one (an unknown verdict from a newer node is not a yes or a no).
    public static func decode(_ payload: ByteBuffer) -> Reply? {
        var payload = payload
        guard payload.readableBytes == 5, let raw = payload.readInteger(as: UInt8.self), let verdict = Verdict(rawValue: raw),
              let idle = payload.readInteger(as: UInt32.self) else { return nil }
        return Reply(verdict: verdict, idleMilliseconds: idle)
    }
}
