import Distributed
import Logging
import NIOConcurrencyHelpers

/// Identities and the local registry: naming, `assignID`, `actorReady`, `resignID`,
/// `resolve`.
extension NodeActorSystem {
    /// The name `assignID` should give the actor being initialized in this task.
    struct PendingName: Sendable {
        var system: ObjectIdentifier
        var id: NodeActorID
    }

    /// Distributed actors receive their id in their initializer, before any code of theirs
    /// runs, so a requested name is passed to `assignID` through a task-local.
    @TaskLocal static var pendingName: PendingName?

    /// Creates a local actor under a well-known name, e.g.
    /// `try system.makeActor(named: "coordinator") { Coordinator(actorSystem: system) }`.
    /// Other nodes reach it with `NodeActorID(nodeID: system.nodeID, name: name)`.
    /// - Throws: `invalidActorID`, or `duplicateActorName` when a live actor has the name.
    public func makeActor<Act: DistributedActor>(
        named name: String,
        _ make: () throws -> Act
    ) throws -> Act where Act.ID == NodeActorID {
        let id = try NodeActorID(nodeID: nodeID, name: name)
        let actor = try Self.$pendingName.withValue(PendingName(system: ObjectIdentifier(self), id: id)) {
            try make()
        }
        // assignID gives an anonymous id instead when the name is taken; that actor is
        // released (and resigned) when this throws.
        guard actor.id == id else {
            throw NodeActorSystemError.duplicateActorName(id)
        }
        return actor
    }

    public func assignID<Act>(_ actorType: Act.Type) -> NodeActorID where Act: DistributedActor, Act.ID == NodeActorID {
        let requested = Self.pendingName.flatMap { $0.system == ObjectIdentifier(self) ? $0.id : nil }
        return state.withLockedValue { state in
            if let requested, state.entries[requested] == nil {
                state.entries[requested] = Entry()
                return requested
            }
            while true {
                let id = NodeActorID(validatedNodeID: nodeID, name: "anonymous-\(state.nextAnonymous)")
                state.nextAnonymous += 1
                if state.entries[id] == nil {
                    state.entries[id] = Entry()
                    return id
                }
            }
        }
    }

    public func actorReady<Act>(_ actor: Act) where Act: DistributedActor, Act.ID == NodeActorID {
        let id = actor.id
        let assigned = state.withLockedValue { state in
            guard state.entries[id] != nil else { return false }
            state.entries[id]?.actor = WeakActor(actor: actor)
            return true
        }
        guard assigned else {
            logger.error("actorReady for an id this system did not assign", metadata: ["actor": "\(id)"])
            return
        }
        let subscription: BusSubscription
        do {
            subscription = try bus.subscribe(subject: id.subject) { [weak self] message in
                self?.receive(message, for: id)
            }
        } catch {
            logger.error("cannot subscribe actor to the bus", metadata: ["actor": "\(id)", "error": "\(error)"])
            return
        }
        let resigned = state.withLockedValue { state in
            guard state.entries[id] != nil else { return true }
            state.entries[id]?.subscription = subscription
            return false
        }
        if resigned {
            subscription.cancel()
        }
    }

    public func resignID(_ id: NodeActorID) {
        let entry = state.withLockedValue { $0.entries.removeValue(forKey: id) }
        entry?.subscription?.cancel()
    }

    /// The local actor with this id, or nil: then the runtime makes a remote proxy, whose
    /// calls go over the bus (and fail with `unreachable` if nobody answers).
    ///
    /// A local actor resolved through its protocol's `@Resolvable` stub (`$CoordinatorAPI`
    /// for the `Coordinator` of the same process, in `--role all`) cannot be returned as
    /// the stub type: it gets a proxy too, and its calls take the same bus path as any
    /// node's, to the actor's own subscription. A wrong concrete type is refused when
    /// called (`unknownTarget`), exactly as for a remote actor.
    public func resolve<Act>(id: NodeActorID, as actorType: Act.Type) throws -> Act? where Act: DistributedActor, Act.ID == NodeActorID {
        state.withLockedValue({ $0.entries[id]?.actor?.actor }) as? Act
    }

    /// Local actors currently registered (ready and not resigned).
    public var localActorIDs: [NodeActorID] {
        state.withLockedValue { state in state.entries.compactMap { $0.value.actor?.actor == nil ? nil : $0.key } }
    }
}
