import Distributed
import Foundation

/// Records a remote call's generic substitutions and arguments for `ActorCallEnvelope`.
public struct NodeInvocationEncoder: DistributedTargetInvocationEncoder {
    public typealias SerializationRequirement = any Codable

    var genericSubstitutions: [String] = []
    var arguments: [Data] = []

    init() {}

    public mutating func recordGenericSubstitution<T>(_ type: T.Type) throws {
        guard let name = _mangledTypeName(T.self) else {
            throw NodeActorSystemError.malformedMessage("no mangled name for generic substitution \(T.self)")
        }
        genericSubstitutions.append(name)
    }

    public mutating func recordArgument<Value: Codable>(_ argument: RemoteCallArgument<Value>) throws {
        do {
            arguments.append(try JSONEncoder().encode(argument.value))
        } catch {
            throw NodeActorSystemError.malformedMessage("cannot encode argument \(argument.label ?? argument.name): \(error)")
        }
    }

    // Error and return types are implied by the target identifier, which both ends share.
    public mutating func recordErrorType<E: Error>(_ type: E.Type) throws {}

    public mutating func recordReturnType<R: Codable>(_ type: R.Type) throws {}

    public mutating func doneRecording() throws {}
}
