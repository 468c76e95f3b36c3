import Hummingbird
import Logging
import Media
import Metrics
import NIOCore
import Session

/// `GET /{app}/{name}.flv` (a stream) and `GET /{app}/{name}/{rung}.flv` (one of its rungs):
/// a live FLV stream over chunked HTTP, as flv.js, mpegts.js, ffplay and VLC play it. The
/// routes themselves are registered by `PlaybackRoutes`, beside HLS's.
///
/// Each viewer is a hub subscriber reading the hub's shared `httpFLVChunk` buffers (FLV tags
/// framed once per stream as HTTP chunks), written from the channel by the connection's
/// `HTTPFLVViewerHandler` as RTMP viewers are: the route only admits the request and
/// answers the head.
///
/// A request is a `PlayRequest` (transport `http-flv`) answered by the node's
/// `SessionAdmission`, the same path an RTMP play takes: a refusal is a 404 (no such
/// stream), 403 (denied) or 503 (capacity).
public struct HTTPFLVRoutes: Sendable {
    public let admission: any SessionAdmission
    private let logger: Logger

    public init(admission: any SessionAdmission, logger: Logger) {
        self.admission = admission
        self.logger = logger
    }

    /// What `/{app}/{file}` names: `file` is `{name}.flv`, and `app` and `name` make a valid
    /// `StreamPath` (its source, or for an old-style `name_rung` that rung when no stream of
    /// that name is live); nil otherwise (a 404). Pure (FuzzHTTPPath checks it).
    public static func streamPath(app: String, file: String) -> RequestedRendition? {
        guard file.hasSuffix(".flv") else { return nil }
        return RequestedRendition(app: app, name: String(file.dropLast(4)))
    }

    /// What `/{app}/{name}/{file}` names: `file` is `{rung}.flv`, a rung of `app/name`.
    public static func renditionPath(app: String, name: String, file: String) -> RequestedRendition? {
        guard file.hasSuffix(".flv"), let stream = try? StreamPath(app: app, name: name),
              let rung = try? RenditionPath(stream: stream, rendition: String(file.dropLast(4))) else { return nil }
        return RequestedRendition(rung)
    }

    func stream(_ requested: RequestedRendition?, query: String, remoteAddress: String, channel: any Channel) async throws -> Response {
        guard let path = requested else {
            RelayMetrics.rejectedRequests(reason: "bad_path")
            return Self.notFound()
        }
        // An operator's kick ends the response (its last chunk) and closes the connection.
        let request = PlayRequest(
            path: path, query: StreamQuery(query), remoteAddress: remoteAddress, transport: .httpFLV,
            kick: { _ in HTTPFLVViewerHandler.endStream(on: channel) }
        )
        let session: PlaySession
        switch await admission.play(request) {
        case .accepted(let accepted):
            session = accepted
        case .refused(let refusal):
            return Self.refused(refusal)
        }
        let hub = session.hub
        let records = hub.configurationRecords
        let preamble = FLVFileHeader.httpFLVPreamble(
            hasAudio: records.audio != nil || records.video == nil,
            hasVideo: records.video != nil || records.audio == nil,
            allocator: channel.allocator
        )
        await session.start()
        let viewer = HTTPFLVViewer(hub: hub, session: session, preamble: HTTPChunk.framed(preamble, allocator: channel.allocator), logger: logger)
        guard await HTTPFLVViewerHandler.arm(viewer, on: channel) else {
            // The viewer left while it was admitted (or the listener cannot stream).
            session.end(.left)
            return Self.refused(.unavailable("the connection cannot take a live stream"))
        }
        var headers = HTTPFields()
        headers[.contentType] = "video/x-flv"
        headers[.cacheControl] = "no-cache, no-store"
        headers[.accessControlAllowOrigin] = "*"
        // A live response ends only with its stream, and then so does the connection.
        headers[.connection] = "close"
        // No content length: the encoder makes the head chunked. The connection's
        // `HTTPFLVViewerHandler` writes the body; this one only lets Hummingbird's task go.
        return Response(status: .ok, headers: headers, body: ResponseBody { _ in
            throw HTTPFLVViewerHandler.HandedOver()
        })
    }

    /// A refusal as an HTTP answer: 404 for a stream that is not there, 403 when the
    /// admission denies it, 503 with `Retry-After: 5` when a capacity is reached.
    static func refused(_ refusal: SessionRefusal) -> Response {
        if let base = refusal.redirect {
            // Completed with the request's path and query by `PlaybackRoutes.redirecting`.
            RelayMetrics.rejectedRequests(reason: "redirected")
            var headers = HTTPFields()
            headers[.accessControlAllowOrigin] = "*"
            headers[.location] = base
            return Response(status: .found, headers: headers)
        }
        let status: HTTPResponse.Status = switch refusal.kind {
        case .notFound, .badName: .notFound
        case .denied: .forbidden
        case .unavailable: .serviceUnavailable
        }
        if status == .notFound { return notFound() }
        RelayMetrics.rejectedRequests(reason: status == .forbidden ? "denied" : "unavailable")
        var headers = HTTPFields()
        headers[.accessControlAllowOrigin] = "*"
        headers[.contentType] = "text/plain; charset=utf-8"
        // A capacity is a while, not for good: say when to try again, so that players back
        // off instead of asking in a loop.
        if status == .serviceUnavailable { headers[.retryAfter] = "5" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: refusal.description + "\n")))
    }

    static func notFound() -> Response {
        var headers = HTTPFields()
        headers[.accessControlAllowOrigin] = "*"
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(status: .notFound, headers: headers, body: .init(byteBuffer: ByteBuffer(string: "stream not found\n")))
    }
}

enum RelayMetrics {
    static let flvViewers = Meter(label: "estuary_httpflv_viewers")

    static func rejectedRequests(reason: String) {
        Counter(label: "estuary_http_requests_rejected_total", dimensions: [("reason", reason)]).increment()
    }
}
