import Media
import RTMP
import Testing

@testable import Edge

struct UpstreamTests {
    @Test func parsesHTTPFLVOrigins() throws {
        let upstream = try Upstream("http://origin-1:8080")
        #expect(upstream.scheme == .http && upstream.authority == "origin-1:8080" && upstream.prefix == "")
        let path = try StreamPath(app: "live", name: "cam")
        #expect(upstream.url(for: .source(path)) == "http://origin-1:8080/live/cam.flv")
        #expect(upstream.url(for: try RenditionPath(stream: path, rendition: "480p")) == "http://origin-1:8080/live/cam/480p.flv")
        let prefixed = try Upstream("https://cdn.example/pull/")
        #expect(prefixed.url(for: .source(path)) == "https://cdn.example/pull/live/cam.flv")
        #expect(try Upstream("HTTP://[::1]:8080").url(for: .source(path)) == "http://[::1]:8080/live/cam.flv")
    }

    @Test func refusesWhatItCannotPull() {
        #expect(throws: Upstream.ParseError.unsupportedScheme("srt://origin:9000")) { try Upstream("srt://origin:9000") }
        #expect(throws: Upstream.ParseError.malformed("rtmp://origin/live")) { try Upstream("rtmp://origin/live") }
        #expect(throws: Upstream.ParseError.malformed("origin:8080")) { try Upstream("origin:8080") }
        #expect(throws: Upstream.ParseError.malformed("http://")) { try Upstream("http://") }
        #expect(throws: Upstream.ParseError.malformed("http://user@origin")) { try Upstream("http://user@origin") }
        #expect(throws: Upstream.ParseError.malformed("http://origin/x?token=1")) { try Upstream("http://origin/x?token=1") }
    }

    /// An RTMP upstream plays `app/name` as application `app`, stream `name`, and a rung as
    /// application `app/name`, stream `rung`: Estuary's RTMP address of a rung.
    @Test func rtmpUpstreamsAddressStreamsAndRungs() throws {
        let upstream = try Upstream("rtmp://origin-1:1935")
        let path = try StreamPath(app: "live", name: "cam")
        let source = try RTMPClientURL(upstream.url(for: .source(path)))
        #expect(source == RTMPClientURL(host: "origin-1", port: 1935, app: "live", streamName: "cam"))
        #expect(source.tcURL == "rtmp://origin-1:1935/live")
        let rung = try RTMPClientURL(upstream.url(for: try RenditionPath(stream: path, rendition: "480p")))
        #expect(rung.app == "live/cam" && rung.streamName == "480p")
        #expect(try RTMPClientURL("rtmp://[::1]/live/cam") == RTMPClientURL(host: "::1", port: 1935, app: "live", streamName: "cam"))
        #expect(throws: RTMPClientURL.ParseError.malformed("rtmp://origin/cam")) { try RTMPClientURL("rtmp://origin/cam") }
    }

    @Test func listsInOrder() throws {
        let list = try Upstream.list("http://a:1, http://b:2,,")
        #expect(list.map(\.authority) == ["a:1", "b:2"])
    }
}

struct UpstreamHealthTests {
    static let upstreams = [try! Upstream("http://a"), try! Upstream("http://b"), try! Upstream("http://c")]  // literals, valid

    @Test func triesInOrderThenMovesOnFromTheOneThatFailed() {
        let health = UpstreamHealth(upstreams: Self.upstreams)
        let now = NIODeadlineSeconds.at(100)
        #expect(health.order(now: now) == [0, 1, 2])
        #expect(health.order(now: now, after: 0) == [1, 2, 0])
        health.failed(1, now: now)
        // b backs off: it comes last, after those that are ready.
        #expect(health.order(now: now, after: 0) == [2, 0, 1])
        // Backoff doubles, with jitter in the upper half: at most 0.5 s, then 0.5–1 s.
        #expect(health.order(now: NIODeadlineSeconds.at(100.6)) == [0, 1, 2])
        health.failed(1, now: NIODeadlineSeconds.at(100.6))
        #expect(health.order(now: NIODeadlineSeconds.at(101.05)) == [0, 2, 1])
        #expect(health.order(now: NIODeadlineSeconds.at(101.7)) == [0, 1, 2])
        health.succeeded(1)
        #expect(health.failures == [0, 0, 0])
    }

    @Test func backoffIsBounded() {
        let health = UpstreamHealth(upstreams: Self.upstreams)
        for _ in 0..<100 { health.failed(0, now: NIODeadlineSeconds.at(0)) }
        #expect(health.retryAt(0) <= NIODeadlineSeconds.at(10))
    }
}

struct BackoffTests {
    @Test func doublesWithinItsUpperHalfUpToTheMaximum() {
        var random = SystemRandomNumberGenerator()
        var backoff = Backoff(first: .seconds(1), max: .seconds(30))
        for failures in 0..<40 {
            let ceiling = min(Duration.seconds(1) * (1 << min(failures, 30)), .seconds(30))
            let delay = backoff.next(using: &random)
            #expect(delay >= ceiling / 2 && delay <= ceiling, "failure \(failures): \(delay) outside [\(ceiling / 2), \(ceiling)]")
        }
        backoff.reset()
        let first = backoff.next(using: &random)
        #expect(first >= .milliseconds(500) && first <= .seconds(1))
    }

    @Test func spreadsRetries() {
        // A thousand streams retrying after one outage do not all pick the same moment.
        let delays = Set((0..<1000).map { _ in Backoff.delay(first: .seconds(1), max: .seconds(30), failures: 2) })
        #expect(delays.count > 900)
    }
}
