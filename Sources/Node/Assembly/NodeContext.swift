import Cluster
import Hummingbird
import Logging
import Media
import NIOCore
import Tokens

/// What every role of one process shares: its configuration and logger, the bus and the
/// actor system on it, the stream registry, the HTTP router, and the coordinator's address.
/// Each role's assembly takes what it needs from here; none reaches into another's.
struct NodeContext {
    let role: NodeRole
    /// The roles this process hosts (`NodeRuntime.hostedRoles`).
    let roles: Set<NodeRole>
    let configuration: NodeConfiguration
    let logger: Logger
    /// The cluster's NATS connection, or nil for a node alone on its in-process bus.
    let nats: NATSBus?
    let bus: any Bus
    let system: NodeActorSystem
    let registry: StreamRegistry
    /// Streams not published here, fetched on demand: a relay's or transcoder's from the
    /// cluster bus (`BusStreamSource`), an edge's from its upstreams (`EdgeStreamSource`).
    let remote: (any RemoteStreamSource)?
    /// The playback port's routes: media, `/healthz`, `/readyz`.
    let router: Router<NodeRequestContext>
    /// The admin plane's routes: the API under `/api/v1`, `/metrics`.
    let adminRouter: Router<NodeRequestContext>
    let group: any EventLoopGroup
    /// The node id of the coordinator, and its actor as seen from here.
    let coordinatorNode: String
    let coordinator: $CoordinatorAPI
    /// Set once the coordinator has answered (`/readyz`).
    let coordinatorStatus: CoordinatorLink.Status
    /// The node's graceful drain: the admission refuses new sessions while it runs.
    let drain: NodeDrain
    /// The node's live sessions (`/api/v1/sessions`), which the roles kick through.
    let sessions: SessionTable
    /// Signed URLs (`tokens`), nil when no application requires them.
    let tokens: TokenVerifier?
    /// The RTMPS and HTTPS certificate (`tls`), nil without one.
    let tls: TLSCertificates?
    /// What a configuration reload gives the running parts (`ConfigurationReloader`).
    let live: LiveConfiguration
}
