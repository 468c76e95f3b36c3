/// Errors of `NodeActorSystem`: identities, remote calls and what the callee answered.
public enum NodeActorSystemError: Error, Equatable, CustomStringConvertible {
    /// A node id or actor name that is not made of valid subject tokens.
    case invalidActorID(nodeID: String, name: String)
    /// `makeActor(named:)` for a name already used on this node.
    case duplicateActorName(NodeActorID)
    /// The two ends speak different envelope versions. Nothing was executed.
    case versionMismatch(local: UInt16, remote: UInt16)
    /// The callee threw; `type` is the error's type name (`String(reflecting:)`), `message`
    /// its description. Errors registered with `registerRemoteError` are rethrown as themselves.
    case remote(type: String, message: String)
    /// No reply before the call's timeout. The call may still have run on the callee.
    case timeout(NodeActorID)
    /// Nobody answers on the actor's subject: its node is down or it was resigned.
    case unreachable(NodeActorID)
    /// The callee's node has a subscription but no live actor under this id (it is being
    /// released).
    case unknownActor(NodeActorID)
    /// The callee's actor has no distributed method with this identifier (another build).
    case unknownTarget(String)
    /// The callee has too many calls in flight (`Configuration.maxConcurrentCalls`).
    case overloaded(NodeActorID)
    /// An envelope, argument or result that could not be encoded or decoded.
    case malformedMessage(String)
    /// The bus refused the request (closed, payload too large, …).
    case bus(BusError)

    public var description: String {
        switch self {
        case .invalidActorID(let nodeID, let name):
            "invalid actor id: node '\(nodeID)', name '\(name)' (tokens of A-Z a-z 0-9 - _)"
        case .duplicateActorName(let id): "an actor named \(id) already exists"
        case .versionMismatch(let local, let remote): "actor protocol version mismatch: local \(local), remote \(remote)"
        case .remote(let type, let message): "remote \(type): \(message)"
        case .timeout(let id): "no reply from \(id) before the timeout"
        case .unreachable(let id): "no responder for \(id)"
        case .unknownActor(let id): "no live actor \(id) on its node"
        case .unknownTarget(let target): "unknown distributed target \(target)"
        case .overloaded(let id): "too many calls in flight on the node of \(id)"
        case .malformedMessage(let detail): "malformed actor message: \(detail)"
        case .bus(let error): error.description
        }
    }
}
