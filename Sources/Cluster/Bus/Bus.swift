import NIOCore

/// A message bus between the parts of a node and between nodes: publish/subscribe on
/// NATS-style subjects, and request/reply.
///
/// Subjects are dot-separated tokens (`media.live.cam1.src`). A subscription's subject may
/// use NATS wildcards: `*` matches exactly one token, `>` (last token only) matches one
/// or more trailing tokens. Published subjects never contain wildcards.
///
/// **Handlers run synchronously on the bus's delivery thread**, not in a Task per
/// message: media travels over the bus, and a Task hop per frame would cost more than the
/// frame. For `LocalBus` that thread is the publisher's; for `NATSBus` it is the cnats
/// thread of the subscription. Handlers must therefore not block and not await: hand the
/// message to your own queue or event loop and return. Messages of one subscription are
/// delivered in order, one at a time.
public protocol Bus: Sendable {
    /// The largest payload one message may carry, in bytes. Larger media frames are
    /// fragmented by `MediaBusFrameEncoder`.
    var maxPayload: Int { get }

    /// Sends `payload` to every current subscriber of `subject`. Never blocks on a
    /// subscriber; a publish with no subscriber is silently discarded.
    func publish(subject: String, payload: ByteBuffer) throws(BusError)

    /// Calls `handler` for every message on `subject` (wildcards allowed) until the returned
    /// subscription is cancelled or released. See the type's documentation: `handler` runs
    /// on the delivery thread and must not block.
    func subscribe(subject: String, handler: @escaping @Sendable (BusMessage) -> Void) throws(BusError) -> BusSubscription

    /// Sends `payload` to one or more subscribers of `subject` with a private reply subject,
    /// and returns the first reply. Throws `BusError.timeout` after `timeout`,
    /// `BusError.noResponders` when nobody listens on `subject`, `BusError.cancelled` when the
    /// calling task is cancelled.
    func request(subject: String, payload: ByteBuffer, timeout: Duration) async throws(BusError) -> ByteBuffer

    /// Counters since the bus was created.
    var statistics: BusStatistics { get }

    /// Whether a publish on `subject` could reach anyone. A publisher may skip the work of
    /// encoding a message nobody receives: `LocalBus` knows its subscribers exactly (in
    /// `--role all` nothing in the process reads `media.…`, every role shares the hubs);
    /// a networked bus cannot know other nodes' interest and says true.
    func hasSubscribers(to subject: String) -> Bool
}

extension Bus {
    public func hasSubscribers(to subject: String) -> Bool { true }

    /// Answers a request: publishes `payload` to the message's reply subject.
    /// Throws `BusError.noReplySubject` for a message that was published, not requested.
    public func respond(to message: BusMessage, payload: ByteBuffer) throws(BusError) {
        guard let replySubject = message.replySubject else {
            throw .noReplySubject(message.subject)
        }
        try publish(subject: replySubject, payload: payload)
    }
}
