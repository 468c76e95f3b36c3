import Cluster
import Hooks
import Ingest
import Logging
import Media
import Tokens

/// Makes the node's admission policies from a configuration: at start, and again on each
/// reload (`ListenerAssembly`). What outlives a reload is held here and shared by every
/// list made: the transcode slots streams hold, the token expiry's watch, the hook caller.
struct AdmissionPolicies: Sendable {
    let drain: NodeDrain?
    /// The ingest's stream-key verifier; asked only while `requireStreamKeys` is set.
    let keys: StreamKeyVerifier?
    let registry: StreamRegistry?
    let transcodes: TranscodeSlots
    let expiry: TokenExpiry
    let hookCaller: HookCaller
    /// An ingest's publications on a cluster's bus, asked for the cluster's one-publisher
    /// rule; nil on a node alone.
    let clusterPublications: BusPublications?
    /// The cluster's one-publisher lock at the coordinator (`ClusterPublisherPolicy.claim`).
    let clusterClaim: (@Sendable (StreamPath, _ handedOver: Bool) async -> Bool?)?
    let nodeID: String
    let logger: Logger

    /// The policies, in the order they are asked; `tokens` is the configuration's verifier
    /// (its keys already read).
    func make(_ configuration: NodeConfiguration, tokens: TokenVerifier?) -> [any AdmissionPolicy] {
        transcodes.limit = configuration.maxTranscodes
        var policies = NodeAdmission.standardPolicies(
            drain: drain, ladders: configuration.ladders, keys: configuration.requireStreamKeys ? keys : nil,
            registry: registry, maxStreams: configuration.maxStreams, transcodes: transcodes,
            tokens: tokens.map { TokenPolicy(verifier: $0, expiry: expiry) }
        )
        if !configuration.hooks.isEmpty {
            // The operator's backend decides the policies' last word.
            policies.append(WebhookPolicy(hooks: configuration.hooks, caller: hookCaller, nodeID: nodeID, logger: logger))
        }
        if let clusterPublications {
            // After the hook, which may rename the stream: the one-publisher rule is about
            // the name it is published under, as the local rule that comes after it is.
            policies.append(ClusterPublisherPolicy(publications: clusterPublications, claim: clusterClaim))
        }
        return policies
    }
}
