import AsyncHTTPClient
import Media
import NIOCore
import NIOHTTP1
import RTMP

/// What an upstream answered a request for one stream.
enum UpstreamAnswer: Sendable {
    /// It has the stream: read it from the feed.
    case media(any UpstreamFeed)
    /// It does not have the stream (HTTP 404, `NetStream.Play.StreamNotFound`).
    case notFound
    case failed(String)
}

/// Opens one stream URL on an upstream: `http(s)://…/app/name.flv` (HTTP-FLV, through the
/// shared AsyncHTTPClient) or `rtmp://host/app/name` (an RTMP play). Used by an edge's pulls
/// (`EdgeStreamSource`) and by static pulls (`StaticPull`).
struct UpstreamConnector: Sendable {
    var client: HTTPClient = .shared
    /// How long the upstream may take to answer (connect included).
    var timeout: Duration
    /// The largest FLV tag accepted.
    var maxTagBytes: Int

    func open(_ url: String) async -> UpstreamAnswer {
        if url.lowercased().hasPrefix("rtmp://") {
            guard let rtmp = try? RTMPClientURL(url) else { return .failed("not an RTMP URL: \(url)") }
            switch await RTMPFeed.open(rtmp, timeout: TimeAmount(timeout)) {
            case .started(let feed): return .media(feed)
            case .notFound: return .notFound
            case .failed(let why): return .failed(why)
            }
        }
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "User-Agent", value: "Estuary-edge")
        // A pull holds its connection for the stream's life, and a 404 should not leave an
        // idle one in the client's pool: one connection per pull, nothing else.
        request.headers.add(name: "Connection", value: "close")
        do {
            let response = try await client.execute(request, timeout: TimeAmount(timeout))
            switch response.status.code {
            case 200: return .media(HTTPFLVFeed(response: response, maxTagBytes: maxTagBytes))
            case 404: return .notFound
            default: return .failed("HTTP \(response.status.code)")
            }
        } catch {
            return .failed(ConnectionFailure.describe(error))
        }
    }
}
