import NIOCore

/// One message as a subscriber receives it.
public struct BusMessage: Sendable {
    /// The subject it was published on (never a wildcard, even for a wildcard subscription).
    public var subject: String
    /// Where a reply goes when the message is a request; answer with `Bus.respond(to:payload:)`.
    public var replySubject: String?
    public var payload: ByteBuffer

    public init(subject: String, replySubject: String? = nil, payload: ByteBuffer) {
        self.subject = subject
        self.replySubject = replySubject
        self.payload = payload
    }
}
