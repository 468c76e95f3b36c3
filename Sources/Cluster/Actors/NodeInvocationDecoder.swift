import Distributed
import Foundation

/// Hands the arguments of an `ActorCallEnvelope` to `executeDistributedTarget`.
public struct NodeInvocationDecoder: DistributedTargetInvocationDecoder {
    public typealias SerializationRequirement = any Codable

    /// Thrown while decoding; the receiver answers `rejected(.malformed)` for it, not
    /// `thrown`, since the method body never ran.
    struct DecodingFailure: Error, CustomStringConvertible {
        var description: String
    }

    private let genericSubstitutions: [String]
    private let arguments: [Data]
    private var nextArgument = 0

    init(envelope: ActorCallEnvelope) {
        genericSubstitutions = envelope.genericSubstitutions
        arguments = envelope.arguments
    }

    public mutating func decodeGenericSubstitutions() throws -> [any Any.Type] {
        // `_typeByName` only looks types up; a name that is unknown here (another build)
        // fails the call instead of guessing.
        try genericSubstitutions.map { name in
            guard let type = _typeByName(name) else {
                throw DecodingFailure(description: "unknown generic substitution \(name)")
            }
            return type
        }
    }

    public mutating func decodeNextArgument<Argument: Codable>() throws -> Argument {
        guard nextArgument < arguments.count else {
            throw DecodingFailure(description: "missing argument \(nextArgument + 1) of type \(Argument.self)")
        }
        let data = arguments[nextArgument]
        nextArgument += 1
        do {
            return try JSONDecoder().decode(Argument.self, from: data)
        } catch {
            throw DecodingFailure(description: "argument \(nextArgument) is not a \(Argument.self): \(error)")
        }
    }

    public mutating func decodeErrorType() throws -> (any Any.Type)? { nil }

    public mutating func decodeReturnType() throws -> (any Any.Type)? { nil }
}
