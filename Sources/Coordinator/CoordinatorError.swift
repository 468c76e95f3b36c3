/// Errors of the coordinator's operations. Codable, so that a remote caller can register it
/// with `NodeActorSystem.registerRemoteError` and catch these cases as themselves.
public enum CoordinatorError: Error, Codable, Equatable, Sendable {
    /// The node never registered (or registered with a coordinator that lost its file).
    case unknownNode(String)
    /// A node id that is not one subject token.
    case invalidNodeID(String)
    /// `app` or `name` outside `StreamPath`'s rules.
    case invalidStreamPath(app: String, name: String)
    /// A stream-level operation on a stream that is not live.
    case streamNotLive(app: String, name: String)
    /// `streamEnded` from a node that does not hold the stream's publisher.
    case notTheIngest(app: String, name: String, nodeID: String)
    /// The coordinator has no way to call the node (no dispatch configured).
    case nodeUnreachable(String)
}
