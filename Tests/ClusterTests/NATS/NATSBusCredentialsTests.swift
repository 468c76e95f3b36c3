import Foundation
import NIOCore
import TestSupport
import Testing

@testable import Cluster

/// NATSBus with a credentials file (`credentialsFile`: user JWT + NKey seed) against a real
/// nats-server in operator (JWT) mode. Keys, JWTs, the server configuration and the
/// `.creds` files come from `scripts/nats-credentials.py`. Every wait is bounded.
@Suite(.serialized, .enabled(if: NATSServer.isAvailable, "nats-server is not installed"))
struct NATSBusCredentialsTests {
    static func configuration(_ server: NATSServer, credentialsFile: String?) -> NATSBusConfiguration {
        var configuration = NATSBusConfiguration(servers: [server.url])
        configuration.name = "estuary-tests"
        configuration.connectTimeout = .seconds(2)
        configuration.credentialsFile = credentialsFile
        return configuration
    }

    /// A refused connection must fail within this, not hang or retry forever.
    static let refusalBound: Duration = .seconds(5)

    @Test func credentialsFilesCarryPublishSubscribeAndRequestReplyBetweenTwoUsers() async throws {
        let credentials = try await NATSCredentials()
        let secondUser = try await credentials.issueUser("second")
        let server = try await NATSServer(extraArguments: ["-c", credentials.serverConfiguration])

        // The server is in operator mode: without credentials nobody gets in.
        await #expect(throws: BusError.self) {
            _ = try await NATSBus.connect(configuration: Self.configuration(server, credentialsFile: nil))
        }

        let service = try await NATSBus.connect(configuration: Self.configuration(server, credentialsFile: credentials.userCredentials))
        let client = try await NATSBus.connect(configuration: Self.configuration(server, credentialsFile: secondUser))
        #expect(service.isConnected && client.isConnected)

        let received = Collector<String>()
        let events = try service.subscribe(subject: "creds.events.>") { message in
            received.append("\(message.subject)=\(String(buffer: message.payload))")
        }
        let responder = try service.subscribe(subject: "creds.rpc") { message in
            var reply = ByteBuffer(string: "re:")
            reply.writeImmutableBuffer(message.payload)
            try? service.respond(to: message, payload: reply)
        }
        try await service.flush()

        try client.publish(subject: "creds.events.one", payload: ByteBuffer(string: "first"))
        try client.publish(subject: "creds.events.two", payload: ByteBuffer(string: "second"))
        #expect(await received.wait(for: 2) == ["creds.events.one=first", "creds.events.two=second"])

        let reply = try await client.request(subject: "creds.rpc", payload: ByteBuffer(string: "ping"), timeout: .seconds(2))
        #expect(String(buffer: reply) == "re:ping")

        events.cancel()
        responder.cancel()
        await client.close()
        await service.close()
        await server.stop()
    }

    @Test func credentialsTheServerCannotTrustAreRefusedQuickly() async throws {
        let credentials = try await NATSCredentials()
        let server = try await NATSServer(extraArguments: ["-c", credentials.serverConfiguration])
        let good = try CredentialsFile(contentsOf: credentials.userCredentials)

        // A user of another operator's account, which this server has never heard of.
        let stranger = try await NATSCredentials()
        var altered = good
        altered.jwt = good.jwtWithAlteredSignature
        // The account's JWT, but the seed of another of its users: the server's nonce is
        // signed with a key that is not the JWT's subject.
        var mismatched = good
        mismatched.seed = try CredentialsFile(contentsOf: try await credentials.issueUser("other")).seed
        let refused: [(String, String)] = [
            ("user of an unknown account", stranger.userCredentials),
            ("user JWT with an altered signature", try credentials.write("altered.creds", altered.text)),
            ("seed of another user", try credentials.write("mismatched.creds", mismatched.text)),
            ("expired user JWT", try await credentials.issueUser("expired", expires: -60)),
        ]

        // The genuine file gets in, so the refusals below are about the credentials.
        let bus = try await NATSBus.connect(configuration: Self.configuration(server, credentialsFile: credentials.userCredentials))
        try await bus.flush()
        await bus.close()

        for (reason, file) in refused {
            let started = ContinuousClock.now
            let error = await #expect(throws: BusError.self, "\(reason)") {
                _ = try await NATSBus.connect(configuration: Self.configuration(server, credentialsFile: file))
            }
            let elapsed = ContinuousClock.now - started
            #expect(elapsed < Self.refusalBound, "\(reason): refused after \(elapsed)")
            guard case .nats(let natsError) = error else {
                Issue.record("\(reason): \(String(describing: error)) is not a NATS error")
                continue
            }
            #expect(natsError.isAuthorizationFailure, "\(reason): \(natsError)")
            #expect(natsError.detail == "Authorization Violation", "\(reason): \(natsError)")
        }
        await server.stop()
    }

    /// A file that cannot be used fails the connect before any authentication, and the
    /// error says which file and why (cnats's text, not only its status).
    @Test func missingOrMalformedCredentialsFileFailsWithTheCauseInTheError() async throws {
        let credentials = try await NATSCredentials()
        let server = try await NATSServer(extraArguments: ["-c", credentials.serverConfiguration])
        let missing = credentials.directory.file("absent.creds").path
        let garbage = try credentials.write("garbage.creds", "not a credentials file\n")
        let cases: [(file: String, cause: String)] = [
            (missing, "error opening file '\(missing)': No such file or directory"),
            (garbage, "no nkey user seed found in '\(garbage)'"),
        ]
        for (file, cause) in cases {
            let started = ContinuousClock.now
            let error = await #expect(throws: BusError.self, "\(file)") {
                _ = try await NATSBus.connect(configuration: Self.configuration(server, credentialsFile: file))
            }
            let elapsed = ContinuousClock.now - started
            #expect(elapsed < Self.refusalBound, "\(file): failed after \(elapsed)")
            guard case .nats(let natsError) = error else {
                Issue.record("\(file): \(String(describing: error)) is not a NATS error")
                continue
            }
            #expect(natsError.detail == cause, "\(natsError)")
            #expect(String(describing: natsError).contains(file), "\(natsError)")
            #expect(!natsError.isAuthorizationFailure, "\(natsError)")
        }
        await server.stop()
    }
}
