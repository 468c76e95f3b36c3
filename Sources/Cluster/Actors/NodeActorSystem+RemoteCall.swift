import Distributed
import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// The calling side: envelope out, bus request, reply in.
extension NodeActorSystem {
    public func makeInvocationEncoder() -> NodeInvocationEncoder {
        NodeInvocationEncoder()
    }

    public func remoteCall<Act, Err, Res>(
        on actor: Act,
        target: RemoteCallTarget,
        invocation: inout NodeInvocationEncoder,
        throwing: Err.Type,
        returning: Res.Type
    ) async throws -> Res where Act: DistributedActor, Act.ID == NodeActorID, Err: Error, Res: Codable {
        switch try await send(to: actor.id, target: target, invocation: invocation) {
        case .returned(let data):
            do {
                return try JSONDecoder().decode(Res.self, from: data)
            } catch {
                throw NodeActorSystemError.malformedMessage("result of \(target) is not a \(Res.self): \(error)")
            }
        case .returnedVoid:
            throw NodeActorSystemError.malformedMessage("\(target) returned nothing, expected \(Res.self)")
        }
    }

    public func remoteCallVoid<Act, Err>(
        on actor: Act,
        target: RemoteCallTarget,
        invocation: inout NodeInvocationEncoder,
        throwing: Err.Type
    ) async throws where Act: DistributedActor, Act.ID == NodeActorID, Err: Error {
        switch try await send(to: actor.id, target: target, invocation: invocation) {
        case .returnedVoid:
            return
        case .returned:
            throw NodeActorSystemError.malformedMessage("\(target) returned a value, expected Void")
        }
    }

    enum CallResult {
        case returned(Data)
        case returnedVoid
    }

    /// Sends the call and maps every failure to the error the caller sees.
    private func send(to id: NodeActorID, target: RemoteCallTarget, invocation: NodeInvocationEncoder) async throws -> CallResult {
        let envelope = ActorCallEnvelope(
            version: version,
            target: target.identifier,
            genericSubstitutions: invocation.genericSubstitutions,
            arguments: invocation.arguments,
            callee: id
        )
        let payload = try envelope.encoded()
        let replyPayload: ByteBuffer
        do {
            replyPayload = try await bus.request(subject: id.subject, payload: payload, timeout: Self.callTimeout ?? configuration.defaultCallTimeout)
        } catch {
            switch error {
            case .timeout: throw NodeActorSystemError.timeout(id)
            case .noResponders: throw NodeActorSystemError.unreachable(id)
            case .cancelled: throw CancellationError()
            default: throw NodeActorSystemError.bus(error)
            }
        }
        let reply = try ActorReplyEnvelope.decode(replyPayload, localVersion: version)
        switch reply.outcome {
        case .returned(let data):
            return .returned(data)
        case .returnedVoid:
            return .returnedVoid
        case .thrown(let description):
            throw remoteError(description)
        case .rejected(let reason, let detail):
            switch reason {
            case .version: throw NodeActorSystemError.versionMismatch(local: version, remote: reply.version)
            case .unknownActor: throw NodeActorSystemError.unknownActor(id)
            case .unknownTarget: throw NodeActorSystemError.unknownTarget(target.description)
            case .overloaded: throw NodeActorSystemError.overloaded(id)
            case .malformed, .noReplySubject: throw NodeActorSystemError.malformedMessage("rejected by \(id): \(detail)")
            }
        }
    }

    /// The registered error type's value when there is one, else `.remote`.
    private func remoteError(_ description: RemoteErrorDescription) -> any Error {
        if let payload = description.payload,
            let decode = state.withLockedValue({ $0.errorDecoders[description.type] }),
            let error = try? decode(payload)
        {
            return error
        }
        return NodeActorSystemError.remote(type: description.type, message: description.message)
    }
}
