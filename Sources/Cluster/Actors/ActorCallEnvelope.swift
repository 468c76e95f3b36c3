import Foundation
import NIOCore

/// A remote call as it travels on the bus (JSON): what `remoteCall` sends to
/// `actor.<nodeID>.<name>`.
struct ActorCallEnvelope: Codable, Sendable, Equatable {
    /// `NodeActorSystem.protocolVersion` of the caller. Read first, on its own, so that an
    /// envelope of another version is identified even if its other fields changed shape.
    var version: UInt16
    /// The mangled `RemoteCallTarget.identifier` of the distributed method.
    var target: String
    /// Mangled type names of the call's generic substitutions, in order.
    var genericSubstitutions: [String]
    /// Each argument JSON-encoded on its own, in order.
    var arguments: [Data]
    /// The actor being called; must match the subject it arrived on.
    var callee: NodeActorID

    func encoded() throws(NodeActorSystemError) -> ByteBuffer {
        do {
            return ByteBuffer(bytes: try JSONEncoder().encode(self))
        } catch {
            throw .malformedMessage("cannot encode call envelope: \(error)")
        }
    }
}

/// The version field alone: decodes any JSON object that has it, whatever else it holds.
struct EnvelopeVersionProbe: Decodable {
    var version: UInt16
}

extension ActorCallEnvelope {
    /// What a receiver makes of a request payload.
    enum Decoded {
        case call(ActorCallEnvelope)
        case otherVersion(UInt16)
        case malformed(String)
    }

    static func decode(_ payload: ByteBuffer, localVersion: UInt16) -> Decoded {
        let data = Data(payload.readableBytesView)
        let decoder = JSONDecoder()
        guard let probe = try? decoder.decode(EnvelopeVersionProbe.self, from: data) else {
            return .malformed("not a call envelope (\(data.count) bytes)")
        }
        guard probe.version == localVersion else {
            return .otherVersion(probe.version)
        }
        do {
            return .call(try decoder.decode(ActorCallEnvelope.self, from: data))
        } catch {
            return .malformed("undecodable call envelope: \(error)")
        }
    }
}
