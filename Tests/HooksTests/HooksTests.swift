import Foundation
import Hooks
import Logging
import Media
import NIOCore
import NIOPosix
import Session
import Testing

@Suite("Webhooks without a node")
struct HooksTests {
    @Test("An application's own hooks apply, else those of *; none where neither is set")
    func lookup() {
        let own = ApplicationHooks(onPublish: HookEndpoint(url: "http://own/publish"))
        let every = ApplicationHooks(onPlay: HookEndpoint(url: "http://every/play"), failOpen: true)
        let configuration = HookConfiguration(["live": own, "*": every])
        #expect(configuration.hooks(for: "live") == own)
        #expect(configuration.hooks(for: "other") == every)
        #expect(HookConfiguration(["live": own]).hooks(for: "other") == nil)
        #expect(own.endpoint(.onPublish)?.url == "http://own/publish" && own.endpoint(.onStop) == nil)
    }

    @Test("A redirect is used only when it is an rtmp(s) or http(s) URL of visible ASCII, at most 1024 bytes")
    func redirects() {
        #expect(HookInstruction(redirect: "rtmp://other:1935").usableRedirect == "rtmp://other:1935")
        #expect(HookInstruction(redirect: "https://edge-2.example/").usableRedirect == "https://edge-2.example/")
        #expect(HookInstruction(redirect: "http://a\r\nSet-Cookie: x=1").usableRedirect == nil)
        #expect(HookInstruction(redirect: "javascript:alert(1)").usableRedirect == nil)
        #expect(HookInstruction(redirect: "http://" + String(repeating: "a", count: 1100)).usableRedirect == nil)
        #expect(HookInstruction(redirect: "other:1935").usableRedirect == nil)
    }

    @Test("The worst case of a hook is every attempt at its timeout and the pauses between")
    func worstCase() {
        #expect(HookEndpoint(url: "http://x", timeout: .seconds(2), retries: 0).worstCase == .seconds(2))
        #expect(HookEndpoint(url: "http://x", timeout: .seconds(1), retries: 2).worstCase == .milliseconds(3300))
    }

    @Test("A publish's body carries the session id it will have, the full query and the node; only the decided fields are set")
    func publishBody() throws {
        let path = try StreamPath(app: "live", name: "cam")
        let request = PublishRequest(path: path, query: StreamQuery("key=s3cret&token=abc"), remoteAddress: "10.0.0.7:50000", transport: .rtmp, evict: {})
        let body = HookEvent.publish(request, nodeID: "ingest-1").encoded()
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any])
        #expect(json["action"] as? String == "on_publish")
        #expect(json["sessionId"] as? String == request.sessionID.rawValue)
        #expect(json["stream"] as? String == "live/cam" && json["app"] as? String == "live" && json["name"] as? String == "cam")
        #expect(json["query"] as? String == "key=s3cret&token=abc")
        #expect(json["protocol"] as? String == "rtmp" && json["remoteAddress"] as? String == "10.0.0.7:50000" && json["nodeId"] as? String == "ingest-1")
        #expect(json["durationSeconds"] == nil && json["reason"] == nil)
    }

    @Test("A play of a rung names the rung as its stream and its source's application")
    func playBody() throws {
        let request = PlayRequest(path: try #require(RequestedRendition(app: "abr/demo", name: "360p")), query: StreamQuery(), remoteAddress: "", transport: .hls)
        let event = HookEvent.play(request, nodeID: "relay-1")
        #expect(event.stream == "abr/demo/360p" && event.app == "abr" && event.name == "demo" && event.protocol == "hls")
    }

    @Test("End hooks beyond the queue are dropped and counted, never waited for")
    func boundedQueue() async throws {
        // A backend that accepts connections and never answers.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { _ in group.next().makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(server.localAddress?.port)
        let notifier = HookNotifier(caller: HookCaller(), capacity: 2, concurrency: 1, logger: Logger(label: "test"))
        let endpoint = HookEndpoint(url: "http://127.0.0.1:\(port)/stop", timeout: .seconds(5), retries: 0)
        let path = try StreamPath(app: "live", name: "cam")
        let event = HookEvent.publish(PublishRequest(path: path, query: StreamQuery(), remoteAddress: "", transport: .rtmp, evict: {}), nodeID: "n")
        let started = ContinuousClock.now
        for _ in 0..<20 {
            notifier.notify(endpoint, event)
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(ContinuousClock.now - started < .seconds(2), "notifying waited for the backend")
        // One in flight, one taken from the queue waiting for a free slot, two queued: at least 16 dropped.
        #expect(notifier.dropped >= 16, "dropped \(notifier.dropped)")
        notifier.stop()
        try await server.close()
        try await group.shutdownGracefully()
    }
}
