import Distributed

/// A transcoder as the coordinator sees it. Each transcode (and `--role all`) node hosts
/// one, under `RoleAddress.transcodeWorker`.
///
/// The coordinator pushes a job the moment it places or moves it, so a rung starts (or
/// comes back after a failover) without waiting for the node's next heartbeat. Both calls
/// are idempotent, like the heartbeat instructions that back them up: the next heartbeat
/// repairs a push that was lost.
@Resolvable
public protocol TranscodeWorkerAPI: DistributedActor where ActorSystem == NodeActorSystem {
    /// Runs the job (starts it unless it runs already).
    distributed func assign(_ assignment: TranscodeAssignment) async throws
    /// Stops the job of `app/name`, if it runs here.
    distributed func stop(app: String, name: String) async throws
    /// The jobs this node runs.
    distributed func jobs() async throws -> [StreamReport]
}
