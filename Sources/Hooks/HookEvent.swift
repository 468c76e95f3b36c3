import Foundation
import Media
import NIOCore
import Session

/// The JSON body of a webhook. The query is sent in full, token and key included: the hook
/// is the operator's own backend, and deciding on them is its job.
public struct HookEvent: Sendable, Codable, Equatable {
    public var action: HookAction
    public var sessionId: String
    /// `app/name`, and for a rung's viewer `app/name/rung`.
    public var stream: String
    public var app: String
    public var name: String
    public var `protocol`: String
    public var remoteAddress: String
    public var query: String
    public var nodeId: String
    /// At the end: how long the session lasted, its bytes, and why it ended.
    public var durationSeconds: Double?
    public var bytesIn: Int?
    public var bytesOut: Int?
    public var reason: String?

    public static func publish(_ request: PublishRequest, nodeID: String) -> HookEvent {
        HookEvent(
            action: .onPublish, sessionId: request.sessionID.rawValue, stream: "\(request.path)", app: request.path.app, name: request.path.name,
            protocol: request.transport.rawValue, remoteAddress: request.remoteAddress, query: request.query.raw, nodeId: nodeID
        )
    }

    public static func play(_ request: PlayRequest, nodeID: String) -> HookEvent {
        let stream = request.path.primary.stream
        return HookEvent(
            action: .onPlay, sessionId: request.sessionID.rawValue, stream: "\(request.path.primary)", app: stream.app, name: stream.name,
            protocol: request.transport.rawValue, remoteAddress: request.remoteAddress, query: request.query.raw, nodeId: nodeID
        )
    }

    public static func unpublished(_ session: PublishSession, nodeID: String) -> HookEvent {
        HookEvent(
            action: .onUnpublish, sessionId: session.sessionID.rawValue, stream: "\(session.path)", app: session.path.app, name: session.path.name,
            protocol: session.transport.rawValue, remoteAddress: session.remoteAddress, query: session.query.raw, nodeId: nodeID,
            durationSeconds: Self.seconds(since: session.startedAt), bytesIn: session.traffic?.received, bytesOut: session.traffic?.sent,
            reason: session.endReason.map { "\($0)" }
        )
    }

    public static func stopped(_ session: PlaySession, nodeID: String) -> HookEvent {
        let stream = session.path.stream
        return HookEvent(
            action: .onStop, sessionId: session.id.rawValue, stream: "\(session.path)", app: stream.app, name: stream.name,
            protocol: session.transport.rawValue, remoteAddress: session.remoteAddress, query: session.query.raw, nodeId: nodeID,
            durationSeconds: Self.seconds(since: session.startedAt), bytesIn: session.traffic?.received, bytesOut: session.traffic?.sent,
            reason: session.endReason.map { "\($0)" }
        )
    }

    static func seconds(since start: Date) -> Double {
        (max(0, Date().timeIntervalSince(start)) * 1000).rounded() / 1000
    }

    /// The body as sent.
    public func encoded() -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(self)) ?? Data("{}".utf8)
        return ByteBuffer(bytes: data)
    }
}
