/// Why a receiving `NodeActorSystem` refused a call; the `reason` label of
/// `estuary_actor_calls_rejected_total` and part of the error reply.
enum ActorCallRejection: String, Codable, Sendable {
    /// Not an envelope: truncated, not JSON, missing fields, bad arguments.
    case malformed
    /// An envelope of another protocol version.
    case version
    /// No live actor under the callee id (or the id does not match the subject).
    case unknownActor = "unknown_actor"
    /// The actor has no such distributed method.
    case unknownTarget = "unknown_target"
    /// `maxConcurrentCalls` reached.
    case overloaded
    /// Published instead of requested: nowhere to send the result.
    case noReplySubject = "no_reply_subject"
}
