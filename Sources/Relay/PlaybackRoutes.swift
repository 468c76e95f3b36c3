import Hummingbird
import HummingbirdCore
import Media
import NIOCore

/// The request context playback needs: the peer's address (for the admission path), and
/// the connection, to which an admitted HTTP-FLV viewer is handed (`HTTPFLVViewerHandler`).
public protocol PlaybackRequestContext: RemoteAddressRequestContext {
    var channel: any Channel { get }
}

/// Every playback URL of a node, on one router.
///
/// | path | answered by |
/// | --- | --- |
/// | `/{app}/{name}.flv` | HTTP-FLV, the stream (or an old-style `name_rung`, see `RequestedRendition`) |
/// | `/{app}/{name}/{rung}.flv` | HTTP-FLV, one of the stream's rungs |
/// | `/{app}/{name}/index.m3u8`, `llhls.m3u8` | HLS master playlists |
/// | `/{app}/{name}/{rendition}/{file}` | HLS media playlists, segments, parts |
///
/// HTTP-FLV and HLS share the three-component shape, and Hummingbird's router takes one
/// parameter name per position, so the routes are registered once here and dispatched by
/// the file name. A node without one of the two answers its paths with 404.
public struct PlaybackRoutes: Sendable {
    public let flv: HTTPFLVRoutes?
    public let hls: HLSRoutes?

    public init(flv: HTTPFLVRoutes?, hls: HLSRoutes?) {
        self.flv = flv
        self.hls = hls
    }

    public func register<Context: PlaybackRequestContext>(on router: Router<Context>) {
        router.get("/:app/:name") { request, context in
            guard let flv = self.flv else { return HTTPFLVRoutes.notFound() }
            let app = context.parameters.get("app") ?? ""
            return Self.redirecting(try await flv.stream(
                HTTPFLVRoutes.streamPath(app: app, file: context.parameters.get("name") ?? ""),
                query: request.uri.query ?? "", remoteAddress: Self.describe(context.remoteAddress),
                channel: context.channel
            ), uri: request.uri)
        }
        router.get("/:app/:name/:rendition") { request, context in
            let app = context.parameters.get("app") ?? ""
            let name = context.parameters.get("name") ?? ""
            let file = context.parameters.get("rendition") ?? ""
            if file.hasSuffix(".flv") {
                guard let flv = self.flv else { return HTTPFLVRoutes.notFound() }
                return Self.redirecting(try await flv.stream(
                    HTTPFLVRoutes.renditionPath(app: app, name: name, file: file),
                    query: request.uri.query ?? "", remoteAddress: Self.describe(context.remoteAddress),
                    channel: context.channel
                ), uri: request.uri)
            }
            guard let hls = self.hls else { return HLSRoutes.status(.notFound) }
            return Self.redirecting(try await hls.master(
                app: app, name: name, file: file, rawQuery: request.uri.query ?? "", remoteAddress: Self.describe(context.remoteAddress)
            ), uri: request.uri)
        }
        router.get("/:app/:name/:rendition/:file") { request, context in
            guard let hls = self.hls else { return HLSRoutes.status(.notFound) }
            // A media playlist naming no session opens one (through the admission) too.
            return Self.redirecting(try await hls.media(
                app: context.parameters.get("app") ?? "",
                name: context.parameters.get("name") ?? "",
                rendition: context.parameters.get("rendition") ?? "",
                file: context.parameters.get("file") ?? "",
                query: request.uri.queryParameters,
                rawQuery: request.uri.query ?? "",
                remoteAddress: Self.describe(context.remoteAddress)
            ), uri: request.uri)
        }
    }

    /// A redirect the admission answered (`SessionRefusal.redirect`, a server's base URL)
    /// with the request's own path and query after it: the player asks the other server for
    /// the same thing.
    static func redirecting(_ response: Response, uri: URI) -> Response {
        guard response.status == .found, let base = response.headers[.location] else { return response }
        var redirected = response
        let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
        redirected.headers[.location] = trimmed + uri.description
        return redirected
    }

    /// `host:port`, as RTMP's requests carry it.
    static func describe(_ address: SocketAddress?) -> String {
        guard let address, let host = address.ipAddress else { return "" }
        return address.port.map { "\(host):\($0)" } ?? host
    }
}
