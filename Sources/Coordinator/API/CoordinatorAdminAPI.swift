import AdminAPI
import Cluster
import Foundation
import Media

/// The cluster's operations of the admin API (docs/openapi.yaml), answered from the
/// coordinator's state: nodes, live streams with their sessions on every node, stream kicks,
/// every node's sessions, and stream keys. The node serves them (`NodeAdminAPI`) where the
/// coordinator runs in its process; the bearer token is checked in front of them.
public struct CoordinatorAdminAPI: Sendable {
    public let state: CoordinatorState

    public init(state: CoordinatorState) {
        self.state = state
    }

    /// The longest kick reason (characters), as the document bounds it.
    public static let maxReasonLength = 200
    /// What a session's client and the log are told when the operator gives no reason.
    public static let defaultKickReason = "kicked by an operator"

    public func listNodes() async throws -> Operations.ListNodes.Output {
        .ok(.init(body: .json(.init(nodes: try await state.nodes().map(Components.Schemas.Node.init)))))
    }

    public func nodeStreams(_ input: Operations.NodeStreams.Input) async throws -> Operations.NodeStreams.Output {
        let id = input.path.id
        do {
            guard let streams = try await state.liveStreams(onNode: id) else {
                return .notFound(.saying("no node \(id.prefix(128))"))
            }
            return .ok(.init(body: .json(.init(node: id, streams: streams.map(Components.Schemas.NodeStream.init)))))
        } catch let error as NodeActorSystemError {
            return .gatewayTimeout(.init(body: .json(.init(error: "node \(id) does not answer: \(error)"))))
        } catch let error as CoordinatorError {
            return .gatewayTimeout(.init(body: .json(.init(error: "node \(id) cannot be reached: \(error)"))))
        }
    }

    public func listStreams() async throws -> Operations.ListStreams.Output {
        .ok(.init(body: .json(.init(streams: try await state.liveStreams().map(Components.Schemas.Stream.init)))))
    }

    public func getStream(_ input: Operations.GetStream.Input) async throws -> Operations.GetStream.Output {
        let (app, name) = (input.path.app, input.path.name)
        guard StreamPath.isValidComponent(app), StreamPath.isValidComponent(name) else {
            return .badRequest(.saying("invalid stream path"))
        }
        guard let stream = try await state.liveStreams().first(where: { $0.app == app && $0.name == name }) else {
            return .notFound(.saying("\(app)/\(name) is not live"))
        }
        let (sessions, unreachable) = try await state.liveSessions()
        let path = "\(app)/\(name)"
        let ofStream = sessions.filter { $0.path == path || $0.path.hasPrefix(path + "/") }
        return .ok(.init(body: .json(.init(
            stream: .init(stream), sessions: ofStream.compactMap(Components.Schemas.Session.init), unreachable: unreachable
        ))))
    }

    public func kickPublisher(_ input: Operations.KickPublisher.Input) async throws -> Operations.KickPublisher.Output {
        let (app, name) = (input.path.app, input.path.name)
        guard StreamPath.isValidComponent(app), StreamPath.isValidComponent(name) else {
            return .badRequest(.saying("invalid stream path"))
        }
        guard try await state.kick(app: app, name: name) else {
            return .notFound(.saying("\(app)/\(name) is not live"))
        }
        return .accepted(.init(body: .json(.init(app: app, name: name))))
    }

    /// Every node's sessions, asked of each node live, oldest first.
    public func listSessions(_ input: Operations.ListSessions.Input) async throws -> Operations.ListSessions.Output {
        let query = input.query
        let (sessions, unreachable) = try await state.liveSessions()
        let filtered = sessions.filter { session in
            (query.path.map { session.path == $0 || session.path.hasPrefix($0 + "/") } ?? true)
                && (query._protocol.map { session.protocol == $0.rawValue } ?? true)
                && (query.kind.map { session.kind == $0.rawValue } ?? true)
                && (query.node.map { session.node == $0 } ?? true)
        }
        return .ok(.init(body: .json(.init(sessions: filtered.compactMap(Components.Schemas.Session.init), unreachable: unreachable))))
    }

    public func getSession(_ input: Operations.GetSession.Input) async throws -> Operations.GetSession.Output {
        let id = input.path.id
        guard SessionReport.isValidID(id), let session = try await state.liveSessions().sessions.first(where: { $0.id == id }),
              let schema = Components.Schemas.Session(session)
        else {
            return .notFound(.saying("no such session"))
        }
        return .ok(.init(body: .json(schema)))
    }

    /// Kicks the session on whichever node holds it.
    public func kickSession(_ input: Operations.KickSession.Input) async throws -> Operations.KickSession.Output {
        let id = input.path.id
        if let given = input.query.reason, given.count > Self.maxReasonLength {
            return .badRequest(.saying("reason is at most \(Self.maxReasonLength) characters"))
        }
        guard SessionReport.isValidID(id) else { return .notFound(.saying("no such session")) }
        if try await state.kickSession(id, reason: input.query.reason ?? Self.defaultKickReason) {
            return .accepted(.init())
        }
        // Listed but not kicked: a transcoder's rung, which ends with its stream.
        if try await state.liveSessions().sessions.contains(where: { $0.id == id && $0.protocol == "transcode" }) {
            return .conflict(.init(body: .json(.init(error: "this session cannot be kicked: a transcoder's rung ends with its stream"))))
        }
        return .notFound(.saying("no such session"))
    }

    public func listStreamKeys() async throws -> Operations.ListStreamKeys.Output {
        .ok(.init(body: .json(.init(keys: try await state.streamKeys().map(Components.Schemas.StreamKey.init)))))
    }

    public func createStreamKey(_ input: Operations.CreateStreamKey.Input) async throws -> Operations.CreateStreamKey.Output {
        guard case let .json(body) = input.body else { return .badRequest(.saying("expected a JSON body {\"app\": …, \"name\": …}")) }
        guard StreamPath.isValidComponent(body.app), StreamPath.isValidComponent(body.name) else {
            return .badRequest(.saying("invalid stream path"))
        }
        return .created(.init(body: .json(.init(try await state.createStreamKey(app: body.app, name: body.name)))))
    }

    public func revokeStreamKey(_ input: Operations.RevokeStreamKey.Input) async throws -> Operations.RevokeStreamKey.Output {
        guard try await state.revokeStreamKey(id: input.path.id) else {
            return .notFound(.saying("no key \(input.path.id)"))
        }
        return .noContent(.init())
    }
}
