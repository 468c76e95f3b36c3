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
/// Each viewer is a hub subscriber reading the hub's shared FLV tag bytes; the response
/// task wakes once per publisher burst and writes everything queued in one batch.
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

    func stream(_ requested: RequestedRendition?, query: String, remoteAddress: String, closed: EventLoopFuture<Void>? = nil) async throws -> Response {
        guard let path = requested else {
            RelayMetrics.rejectedRequests(reason: "bad_path")
            return Self.notFound()
        }
        let request = PlayRequest(path: path, query: StreamQuery(query), remoteAddress: remoteAddress, transport: .httpFLV)
        let hub: StreamHub
        switch await admission.play(request) {
        case .accept(let accepted):
            hub = accepted
        case .refuse(let refusal):
            return Self.refused(refusal)
        }
        let admission = admission
        let session = PlaySession(path: hub.path, transport: .httpFLV, remoteAddress: remoteAddress)
        let format = OutputFormat.flvTag
        let records = hub.configurationRecords
        let preamble = FLVFileHeader.httpFLVPreamble(
            hasAudio: records.audio != nil || records.video == nil,
            hasVideo: records.video != nil || records.audio == nil,
            allocator: ByteBufferAllocator()
        )
        let logger = logger
        var headers = HTTPFields()
        headers[.contentType] = "video/x-flv"
        headers[.cacheControl] = "no-cache, no-store"
        headers[.accessControlAllowOrigin] = "*"
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            let (wakes, waker) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
            let subscriber = HubSubscriber(format: format, maxQueueBytes: hub.configuration.subscriberQueueBytes) { _ in
                waker.yield()
            }
            RelayMetrics.flvViewers.increment()
            await admission.playStarted(session)
            defer {
                hub.unsubscribe(subscriber)
                Task { await admission.playEnded(session) }
                waker.finish()
                RelayMetrics.flvViewers.decrement()
                let statistics = subscriber.statistics
                if statistics.skips > 0 {
                    logger.info("HTTP-FLV viewer of \(path) left after \(statistics.skips) queue overflows (\(statistics.droppedFrames) frames skipped)")
                }
            }
            try await writer.write(preamble)
            guard hub.subscribe(subscriber) else {
                try await writer.finish(nil)
                return
            }
            // A viewer that leaves is otherwise noticed only at the next write, which an idle
            // stream may never make. (One callback per accepted response: a connection has as
            // many as streams ended under it, since a live response ends only with its stream.)
            closed?.whenComplete { _ in waker.finish() }
            for await _ in wakes {
                let batch = subscriber.drain()
                // At most `maxTagsPerWrite` tags per write: see its comment.
                var start = batch.packets.startIndex
                while start < batch.packets.endIndex {
                    let end = min(start + Self.maxTagsPerWrite, batch.packets.endIndex)
                    try await writer.write(contentsOf: batch.packets[start..<end].lazy.compactMap { $0.bytes(for: format) })
                    start = end
                }
                if batch.ended { break }
            }
            try await writer.finish(nil)
        })
    }

    /// The most tags one `write(contentsOf:)` hands to the channel.
    ///
    /// The HTTP/1 encoder turns every tag into three writes (chunk header, tag, CRLF), all
    /// queued in the channel's pending-writes ring before the flush, and that ring keeps its
    /// largest size for the life of the connection. Handing a joining viewer's whole GOP
    /// (≈ 150 tags at 2 s) over in one call grew it to 512 entries, ≈ 18 KiB per viewer
    /// for as long as it watches (docs/benchmarks.md, "Where an HTTP-FLV viewer's memory
    /// goes"). In slices of 16 tags (48 writes) it grows to about 256 (the socket cannot
    /// take a whole GOP at once), ≈ 12 KiB; a live 100 ms burst is a handful of tags, so
    /// only the join takes more than one slice. The bytes and their order are the same;
    /// when the socket is full, the writer still waits for it between slices.
    static let maxTagsPerWrite = 16

    /// A refusal as an HTTP answer: 404 for a stream that is not there, 403 when the
    /// admission denies it, 503 when a capacity is reached.
    static func refused(_ refusal: SessionRefusal) -> Response {
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
