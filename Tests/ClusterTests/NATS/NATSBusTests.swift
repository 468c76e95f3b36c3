import Foundation
import Logging
import Media
import MetricsTestKit
import NIOCore
import TestSupport
import Testing

@testable import Cluster

/// NATSBus against a real nats-server on a random loopback port. Every wait is bounded.
@Suite(.serialized, .enabled(if: NATSServer.isAvailable, "nats-server is not installed"))
struct NATSBusTests {
    static func configuration(_ server: NATSServer) -> NATSBusConfiguration {
        var configuration = NATSBusConfiguration(servers: [server.url])
        configuration.name = "estuary-tests"
        configuration.connectTimeout = .seconds(2)
        return configuration
    }

    @Test func publishedMessagesReachWildcardSubscribersOnAnotherConnection() async throws {
        let server = try await NATSServer()
        let publisher = try await NATSBus.connect(configuration: Self.configuration(server))
        let subscriber = try await NATSBus.connect(configuration: Self.configuration(server))
        let received = Collector<String>()
        let subscription = try subscriber.subscribe(subject: "media.*.cam1.>") { message in
            received.append("\(message.subject)=\(String(buffer: message.payload))")
        }
        try await subscriber.flush()
        for (index, subject) in ["media.live.cam1.src", "media.live.cam2.src", "media.test.cam1.720p"].enumerated() {
            try publisher.publish(subject: subject, payload: ByteBuffer(string: "m\(index)"))
        }
        let values = await received.wait(for: 2)
        #expect(values == ["media.live.cam1.src=m0", "media.test.cam1.720p=m2"])
        #expect(publisher.maxPayload == 1 << 20)
        #expect(publisher.statistics.messagesOut >= 3)

        subscription.cancel()
        try await subscriber.flush()
        try publisher.publish(subject: "media.live.cam1.src", payload: ByteBuffer(string: "late"))
        try await publisher.flush()
        try await Task.sleep(for: .milliseconds(200))
        #expect(received.values.count == 2)

        await publisher.close()
        await subscriber.close()
        #expect(throws: BusError.closed) { try publisher.publish(subject: "a", payload: ByteBuffer()) }
        await server.stop()
    }

    @Test func requestGetsAReplyTimesOutOrFindsNoResponder() async throws {
        let server = try await NATSServer()
        let client = try await NATSBus.connect(configuration: Self.configuration(server))
        let service = try await NATSBus.connect(configuration: Self.configuration(server))
        let responder = try service.subscribe(subject: "rpc.echo") { message in
            var reply = ByteBuffer(string: "re:")
            reply.writeImmutableBuffer(message.payload)
            try? service.respond(to: message, payload: reply)
        }
        let silent = try service.subscribe(subject: "rpc.silent") { _ in }
        try await service.flush()

        let replies = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<20 {
                group.addTask {
                    String(buffer: try await client.request(subject: "rpc.echo", payload: ByteBuffer(string: "\(index)"), timeout: .seconds(5)))
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(replies == Set((0..<20).map { "re:\($0)" }))

        let start = ContinuousClock.now
        await #expect(throws: BusError.timeout(subject: "rpc.silent")) {
            try await client.request(subject: "rpc.silent", payload: ByteBuffer(), timeout: .milliseconds(300))
        }
        #expect(ContinuousClock.now - start < .seconds(3))
        await #expect(throws: BusError.noResponders(subject: "rpc.nobody")) {
            try await client.request(subject: "rpc.nobody", payload: ByteBuffer(), timeout: .seconds(5))
        }
        responder.cancel()
        silent.cancel()
        await client.close()
        await service.close()
        await server.stop()
    }

    @Test func threeMebibyteMediaFrameIsReassembledThroughTheServer() async throws {
        let server = try await NATSServer()
        let publisherBus = try await NATSBus.connect(configuration: Self.configuration(server))
        let subscriberBus = try await NATSBus.connect(configuration: Self.configuration(server))
        let subject = try MediaBusSubject(path: StreamPath(app: "live", name: "big"), rendition: "src")
        let received = Collector<FrameSnapshot>()
        let subscription = try MediaBusSubscription(bus: subscriberBus, subject: subject, metrics: TestMetrics()) { frame, _ in
            received.append(FrameSnapshot(frame))
        }
        try await subscriberBus.flush()
        let publisher = MediaBusPublisher(bus: publisherBus, subject: subject, epoch: 42)
        let frames = [
            Frames.videoSequenceHeader(),
            Frames.video(timestamp: 0, keyframe: true, size: 3 << 20, seed: 9),
            Frames.video(timestamp: 40, keyframe: false, size: 1000),
        ]
        for frame in frames {
            try publisher.publish(frame)
        }
        let values = await received.wait(for: 3, timeout: .seconds(10))
        #expect(values == frames.map(FrameSnapshot.init))
        #expect(subscription.statistics.reassembly.gaps == 0)
        #expect(subscriberBus.statistics.messagesIn >= 6)  // 1 + 4 fragments + 1
        subscription.cancel()
        await publisherBus.close()
        await subscriberBus.close()
        await server.stop()
    }

    @Test func tokenAuthenticationAcceptsTheTokenAndRefusesAnother() async throws {
        let server = try await NATSServer(extraArguments: ["--auth", "s3cret-token"])
        try await Self.checkAuthentication(server, accepted: { $0.token = "s3cret-token" }, refused: [
            { $0.token = "wrong-token" },
            { $0.token = nil },
        ])
    }

    @Test func userAndPasswordAreAcceptedAndAWrongPasswordRefused() async throws {
        let server = try await NATSServer(extraArguments: ["--user", "estuary", "--pass", "p4ss-word"])
        try await Self.checkAuthentication(server, accepted: { $0.user = "estuary"; $0.password = "p4ss-word" }, refused: [
            { $0.user = "estuary"; $0.password = "wrong" },
            { $0.user = "someone"; $0.password = "p4ss-word" },
        ])
    }

    /// Messages flow with the `accepted` credentials; each of the `refused` ones fails to
    /// connect with an authorization error. Stops the server.
    static func checkAuthentication(
        _ server: NATSServer,
        accepted: (inout NATSBusConfiguration) -> Void,
        refused: [(inout NATSBusConfiguration) -> Void]
    ) async throws {
        var good = configuration(server)
        accepted(&good)
        let bus = try await NATSBus.connect(configuration: good)
        let received = Collector<String>()
        let subscription = try bus.subscribe(subject: "auth.ok") { received.append(String(buffer: $0.payload)) }
        try await bus.flush()
        try bus.publish(subject: "auth.ok", payload: ByteBuffer(string: "hello"))
        #expect(await received.wait(for: 1) == ["hello"])
        subscription.cancel()
        await bus.close()

        for credentials in refused {
            var bad = configuration(server)
            credentials(&bad)
            await #expect {
                _ = try await NATSBus.connect(configuration: bad)
            } throws: { error in
                guard case .nats(let natsError) = error as? BusError else { return false }
                return natsError.isAuthorizationFailure
            }
        }
        await server.stop()
    }

    @Test func busReconnectsByItselfAndDeliversWhatWasPublishedDuringTheOutage() async throws {
        let server = try await NATSServer()
        let events = Collector<NATSBusEvent>()
        var configuration = Self.configuration(server)
        configuration.reconnectWait = .milliseconds(100)
        let bus = try await NATSBus.connect(configuration: configuration) { events.append($0) }
        let received = Collector<String>()
        // Publisher and subscriber share the connection: cnats renews subscriptions before
        // it sends the reconnect buffer, so the buffered messages are sure to come back.
        let subscription = try bus.subscribe(subject: "outage.>") { received.append(String(buffer: $0.payload)) }
        try await bus.flush()
        try bus.publish(subject: "outage.before", payload: ByteBuffer(string: "before"))
        #expect(await received.wait(for: 1) == ["before"])

        await server.stop()
        let disconnected = await events.wait(for: 1, timeout: .seconds(5))
        #expect(disconnected.contains(.disconnected))
        for index in 0..<5 {
            try bus.publish(subject: "outage.during", payload: ByteBuffer(string: "during-\(index)"))
        }
        try await Task.sleep(for: .seconds(2))
        #expect(received.values == ["before"])

        try await server.start()
        let deadline = ContinuousClock.now + .seconds(10)
        while !events.values.contains(.reconnected), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(events.values.contains(.reconnected))
        #expect(await received.wait(for: 6, timeout: .seconds(5)) == ["before"] + (0..<5).map { "during-\($0)" })

        try bus.publish(subject: "outage.after", payload: ByteBuffer(string: "after"))
        #expect(await received.wait(for: 7).last == "after")
        #expect(bus.isConnected)
        #expect(bus.statistics.reconnects == 1)
        subscription.cancel()
        await bus.close()
        await server.stop()
    }
}

/// Connection set-ups that need more than a plain server: TLS, a server that starts late.
@Suite(.serialized, .enabled(if: NATSServer.isAvailable, "nats-server is not installed"))
struct NATSBusConnectionTests {
    @Test func connectsOverTLSWithTheConfiguredCertificateAuthority() async throws {
        let directory = try TemporaryDirectory(prefix: "estuary-nats-tls")
        let certificate = directory.file("server.pem").path
        let key = directory.file("server.key").path
        let openssl = try await Tool.run("openssl", [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", key, "-out", certificate,
        ], in: directory.url, timeout: .seconds(30))
        try #require(openssl.succeeded, "\(openssl)")
        let server = try await NATSServer(extraArguments: ["--tls", "--tlscert", certificate, "--tlskey", key])

        var configuration = NATSBusConfiguration(servers: [server.url])
        configuration.tls = .init(caFile: certificate)
        let bus = try await NATSBus.connect(configuration: configuration)
        let received = Collector<String>()
        let subscription = try bus.subscribe(subject: "secure.x") { received.append(String(buffer: $0.payload)) }
        try await bus.flush()
        try bus.publish(subject: "secure.x", payload: ByteBuffer(string: "over tls"))
        #expect(await received.wait(for: 1) == ["over tls"])
        subscription.cancel()
        await bus.close()

        // Without the CA the self-signed certificate is refused.
        var untrusting = NATSBusConfiguration(servers: [server.url])
        untrusting.tls = .init()
        await #expect(throws: BusError.self) {
            _ = try await NATSBus.connect(configuration: untrusting)
        }
        await server.stop()
    }

    @Test func retryOnFailedConnectWaitsForALateServer() async throws {
        let port = try LoopbackPort.free()
        var configuration = NATSBusConfiguration(servers: ["nats://127.0.0.1:\(port)"])
        configuration.retryOnFailedConnect = true
        configuration.reconnectWait = .milliseconds(100)
        let events = Collector<NATSBusEvent>()
        let bus = try await NATSBus.connect(configuration: configuration) { events.append($0) }
        #expect(!bus.isConnected)
        #expect(bus.maxPayload == configuration.fallbackMaxPayload)
        let received = Collector<String>()
        let subscription = try bus.subscribe(subject: "late.x") { received.append(String(buffer: $0.payload)) }
        try bus.publish(subject: "late.x", payload: ByteBuffer(string: "queued"))

        let server = try await NATSServer(port: port)
        let deadline = ContinuousClock.now + .seconds(10)
        while !bus.isConnected, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(bus.isConnected)
        #expect(await received.wait(for: 1) == ["queued"])
        #expect(await events.wait(for: 1).contains(.connected))
        subscription.cancel()
        await bus.close()
        await server.stop()
    }
}
