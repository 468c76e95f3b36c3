import Distributed
import NIOConcurrencyHelpers
import NIOCore

/// The receiving side: a request on an actor's subject becomes `executeDistributedTarget`.
extension NodeActorSystem {
    /// Runs on the bus's delivery thread: decodes and checks the envelope, then hands the
    /// execution to a Task. Never blocks, never throws; every refusal is counted and
    /// answered when the message has a reply subject.
    func receive(_ message: BusMessage, for id: NodeActorID) {
        let responder = ActorCallResponder(bus: bus, request: message, version: version, metricsFactory: metricsFactory, logger: logger)
        let envelope: ActorCallEnvelope
        switch ActorCallEnvelope.decode(message.payload, localVersion: version) {
        case .call(let decoded):
            envelope = decoded
        case .otherVersion(let remote):
            responder.reject(.version, "envelope version \(remote), this node speaks \(version)")
            return
        case .malformed(let detail):
            responder.reject(.malformed, detail)
            return
        }
        guard message.replySubject != nil else {
            responder.reject(.noReplySubject, "calls must be requests")
            return
        }
        // The subject names the actor too; a disagreeing envelope is a misrouted call.
        guard envelope.callee == id else {
            responder.reject(.unknownActor, "envelope for \(envelope.callee) arrived on \(id.subject)")
            return
        }
        let limit = configuration.maxConcurrentCalls
        let admitted: (any DistributedActor)?? = state.withLockedValue { state in
            guard let actor = state.entries[id]?.actor?.actor else { return .some(nil) }
            guard state.callsInFlight < limit else { return nil }
            state.callsInFlight += 1
            return .some(actor)
        }
        guard let found = admitted else {
            responder.reject(.overloaded, "\(limit) calls in flight")
            return
        }
        guard let actor = found else {
            responder.reject(.unknownActor, "no live actor \(id)")
            return
        }
        Task {
            await self.execute(envelope, on: actor, responder: responder)
            self.state.withLockedValue { $0.callsInFlight -= 1 }
        }
    }

    private func execute(_ envelope: ActorCallEnvelope, on actor: some DistributedActor, responder: ActorCallResponder) async {
        var decoder = NodeInvocationDecoder(envelope: envelope)
        do {
            try await executeDistributedTarget(
                on: actor,
                target: RemoteCallTarget(envelope.target),
                invocationDecoder: &decoder,
                handler: NodeResultHandler(responder: responder)
            )
        } catch let failure as NodeInvocationDecoder.DecodingFailure {
            responder.reject(.malformed, failure.description)
        } catch {
            // The runtime throws (before calling the handler) when the target is unknown
            // to this build or does not belong to the actor's type.
            responder.reject(.unknownTarget, "\(RemoteCallTarget(envelope.target)): \(error)")
        }
    }
}
