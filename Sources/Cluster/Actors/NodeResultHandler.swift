import Distributed
import Foundation

/// Turns the outcome of `executeDistributedTarget` into a reply on the bus.
public struct NodeResultHandler: DistributedTargetInvocationResultHandler {
    public typealias SerializationRequirement = any Codable

    let responder: ActorCallResponder

    public func onReturn<Success: Codable>(value: Success) async throws {
        do {
            responder.reply(.returned(try JSONEncoder().encode(value)))
        } catch {
            responder.reply(.thrown(RemoteErrorDescription(NodeActorSystemError.malformedMessage("cannot encode result \(Success.self): \(error)"))))
        }
    }

    public func onReturnVoid() async throws {
        responder.reply(.returnedVoid)
    }

    public func onThrow<Err: Error>(error: Err) async throws {
        if let failure = error as? NodeInvocationDecoder.DecodingFailure {
            responder.reject(.malformed, failure.description)
        } else {
            responder.reply(.thrown(RemoteErrorDescription(error)))
        }
    }
}
