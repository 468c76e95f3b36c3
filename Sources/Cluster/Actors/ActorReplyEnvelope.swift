import Foundation
import NIOCore

/// The answer to an `ActorCallEnvelope` (JSON), sent to the request's reply subject.
struct ActorReplyEnvelope: Codable, Sendable, Equatable {
    /// The protocol version of the node that answered. A caller of another version throws
    /// `versionMismatch` without looking further.
    var version: UInt16
    var outcome: Outcome

    enum Outcome: Codable, Sendable, Equatable {
        /// The method returned this JSON-encoded value.
        case returned(Data)
        /// The method returned Void.
        case returnedVoid
        /// The method threw.
        case thrown(RemoteErrorDescription)
        /// The receiver refused the call; nothing was executed (or, for a bad argument,
        /// execution stopped before the method body).
        case rejected(reason: ActorCallRejection, detail: String)
    }

    func encoded() -> ByteBuffer? {
        guard let data = try? JSONEncoder().encode(self) else { return nil }
        return ByteBuffer(bytes: data)
    }

    /// Decodes a reply; another version throws `versionMismatch`, garbage `malformedMessage`.
    static func decode(_ payload: ByteBuffer, localVersion: UInt16) throws(NodeActorSystemError) -> ActorReplyEnvelope {
        let data = Data(payload.readableBytesView)
        let decoder = JSONDecoder()
        guard let probe = try? decoder.decode(EnvelopeVersionProbe.self, from: data) else {
            throw .malformedMessage("not a reply envelope (\(data.count) bytes)")
        }
        guard probe.version == localVersion else {
            throw .versionMismatch(local: localVersion, remote: probe.version)
        }
        do {
            return try decoder.decode(ActorReplyEnvelope.self, from: data)
        } catch {
            throw .malformedMessage("undecodable reply envelope: \(error)")
        }
    }
}

/// An error thrown by a remote method, as it crosses the bus.
struct RemoteErrorDescription: Codable, Sendable, Equatable {
    /// `String(reflecting:)` of the error's type, e.g. `ClusterTests.GreeterError`.
    var type: String
    /// `String(describing:)` of the error.
    var message: String
    /// The error JSON-encoded when it is `Encodable`, so that a caller that registered the
    /// type can rethrow the original value.
    var payload: Data?

    init(type: String, message: String, payload: Data? = nil) {
        self.type = type
        self.message = message
        self.payload = payload
    }

    init(_ error: any Error) {
        type = String(reflecting: Swift.type(of: error))
        message = String(describing: error)
        payload = (error as? any Encodable).flatMap { try? JSONEncoder().encode($0) }
    }
}
