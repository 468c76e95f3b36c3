import Crypto
import Foundation
import Ingest
import Logging
import Media
import Relay
import Session
import Synchronization
import Testing
import Tokens
import Transcode

@testable import Node

/// `NodeAdmission.refusalWithoutWaiting` and `refusalWithoutSideEffects`, which SRT's
/// handshake asks: they refuse only what the full admission would refuse too. The first
/// answers nil for whatever needs asking someone (a key the coordinator has not answered
/// for, a JWT); the second asks the coordinator and checks the JWT, and neither holds
/// anything or tells a hook.
struct RefusalWithoutWaitingTests {
    static let hmacSecret = "hmac-secret-0123456789"
    static let jwtSecret = "jwt-secret-0123456789abcdef-0123456789"

    /// A node whose `live` application needs tokens, and whose keys are asked of a stand-in
    /// coordinator that counts its questions.
    static func admission(keys: StreamKeyVerifier?, draining: NodeDrain? = nil, last: (any AdmissionPolicy)? = nil) async throws -> NodeAdmission {
        let registry = StreamRegistry(serializers: [])
        let tokens = try await TokenVerifier.make(["live": ApplicationTokens(hmacSecret: hmacSecret, jwtSecret: jwtSecret)])
        return NodeAdmission(
            admission: PublishAdmission(registry: registry, logger: NodeAdmissionTests.logger),
            playback: Playback(registry: registry), logger: NodeAdmissionTests.logger,
            policies: NodeAdmission.standardPolicies(
                drain: draining, ladders: [:], keys: keys, registry: registry, maxStreams: nil, transcodes: TranscodeSlots(limit: nil),
                tokens: TokenPolicy(verifier: tokens, expiry: TokenExpiry(logger: NodeAdmissionTests.logger))
            ) + (last.map { [$0] } ?? [])
        )
    }

    static func publish(_ app: String, _ name: String, _ query: String) throws -> PublishRequest {
        PublishRequest(path: try StreamPath(app: app, name: name), query: StreamQuery(query), remoteAddress: "10.0.0.1", transport: .srt, evict: {})
    }

    static func play(_ app: String, _ name: String, _ query: String) throws -> PlayRequest {
        PlayRequest(path: try #require(RequestedRendition(app: app, name: name)), query: StreamQuery(query), remoteAddress: "10.0.0.1", transport: .srt)
    }

    static func hmac(_ action: TokenAction, _ path: StreamPath, expires: Int64) -> String {
        "token=\(TokenVerifier.hmac(secret: hmacSecret, action: action, path: path, expires: expires))&expires=\(expires)"
    }

    @Test func aMissingKeyIsRefusedAtOnceAndAWrongOneOnlyOnceTheCoordinatorHasSaidSo() async throws {
        let asked = Mutex(0)
        let keys = StreamKeyVerifier(logger: NodeAdmissionTests.logger) { _, key in
            asked.withLock { $0 += 1 }
            return key == "right"
        }
        let admission = try await Self.admission(keys: keys)
        let cam = try StreamPath(app: "other", name: "cam")

        let missing = try #require(admission.refusalWithoutWaiting(try Self.publish("other", "cam", "")))
        #expect(missing.refusal.kind == .denied)
        #expect(missing.reason.contains("a stream key is required"))
        // A key the coordinator was not asked about: not decided here, and not asked either.
        #expect(admission.refusalWithoutWaiting(try Self.publish("other", "cam", "key=wrong")) == nil)
        #expect(asked.withLock { $0 } == 0, "the handshake's check asked the coordinator")
        // Once the full admission has asked, its answer is cached: refused at once after.
        #expect(await admission.publish(try Self.publish("other", "cam", "key=wrong")).result.failure?.kind == .denied)
        #expect(admission.refusalWithoutWaiting(try Self.publish("other", "cam", "key=wrong"))?.refusal.kind == .denied)
        #expect(admission.refusalWithoutWaiting(try Self.publish("other", "cam", "key=right")) == nil)
        #expect(await keys.check(cam, key: "right") == .accepted)
        #expect(admission.refusalWithoutWaiting(try Self.publish("other", "cam", "key=right")) == nil)
        #expect(asked.withLock { $0 } == 2)
    }

    @Test func aWrongKeyIsRefusedWithoutSideEffectsOnceTheCoordinatorHasBeenAskedAndNoHookIsTold() async throws {
        let asked = Mutex(0)
        let keys = StreamKeyVerifier(logger: NodeAdmissionTests.logger) { _, key in
            asked.withLock { $0 += 1 }
            return key == "right"
        }
        let hook = CountingPolicy()
        let admission = try await Self.admission(keys: keys, last: hook)

        #expect(admission.asksWithoutSideEffects(try Self.publish("other", "cam", "key=wrong")))
        #expect(!admission.asksWithoutSideEffects(try Self.publish("other", "cam", "")))
        let wrong = try #require(await admission.refusalWithoutSideEffects(try Self.publish("other", "cam", "key=wrong")))
        #expect(wrong.refusal.kind == .denied)
        #expect(wrong.reason == "stream key refused")
        #expect(asked.withLock { $0 } == 1)
        // The answer is the verifier's cache: the quick check and the admission read it, and
        // there is nothing left to ask.
        #expect(!admission.asksWithoutSideEffects(try Self.publish("other", "cam", "key=wrong")))
        #expect(admission.refusalWithoutWaiting(try Self.publish("other", "cam", "key=wrong"))?.refusal.kind == .denied)
        #expect(await admission.refusalWithoutSideEffects(try Self.publish("other", "cam", "key=right")) == nil)
        #expect(asked.withLock { $0 } == 2)
        #expect(hook.asked.withLock { $0 } == 0, "the side-effect-free check asked the last policy (a hook's place)")
        // The full admission of the right key asks no one again, and does ask the hook.
        #expect(await admission.publish(try Self.publish("other", "cam", "key=right")).result.failure == nil)
        #expect(asked.withLock { $0 } == 2)
        #expect(hook.asked.withLock { $0 } == 1)
    }

    /// A coordinator slower than SRT's handshake waits: the handshake gives up on its check,
    /// the caller is connected, and the full admission awaits the same question instead of
    /// asking again.
    @Test func aKeyCheckThatOutlastsTheHandshakeIsSharedWithTheAdmission() async throws {
        let asked = Mutex(0)
        let keys = StreamKeyVerifier(logger: NodeAdmissionTests.logger) { _, key in
            asked.withLock { $0 += 1 }
            try await Task.sleep(for: .milliseconds(300))
            return key == "right"
        }
        let admission = try await Self.admission(keys: keys)
        for key in ["wrong", "right"] {
            let handshake = Task { await admission.refusalWithoutSideEffects(try Self.publish("other", "cam", "key=\(key)")) }
            try await Task.sleep(for: .milliseconds(50))  // the handshake's wait ends here
            let admitted = await admission.publish(try Self.publish("other", "cam", "key=\(key)"))
            #expect((admitted.result.failure?.kind == .denied) == (key == "wrong"), "\(key)")
            #expect((try await handshake.value != nil) == (key == "wrong"), "\(key)")
            admitted.session?.end(.left)
        }
        #expect(asked.withLock { $0 } == 2, "the coordinator was asked \(asked.withLock { $0 }) times for two keys")
    }

    /// An HS256 JWT signed with `secret`, as a backend would issue it.
    static func jwt(_ claims: String, secret: String) -> String {
        func base64URL(_ bytes: some Sequence<UInt8>) -> String {
            Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let signed = base64URL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) + "." + base64URL(Array(claims.utf8))
        let signature = HMAC<SHA256>.authenticationCode(for: Array(signed.utf8), using: SymmetricKey(data: Array(secret.utf8)))
        return signed + "." + base64URL(signature)
    }

    @Test func aJWTIsCheckedWithoutSideEffects() async throws {
        let admission = try await Self.admission(keys: nil)
        let expires = Int(Date().timeIntervalSince1970) + 600
        let forged = Self.jwt(#"{"exp":\#(expires)}"#, secret: String(repeating: "x", count: 40))
        let valid = Self.jwt(#"{"exp":\#(expires),"actions":["play"]}"#, secret: Self.jwtSecret)
        #expect(admission.refusalWithoutWaiting(try Self.play("live", "cam", "token=\(forged)")) == nil)
        let refused = try #require(await admission.refusalWithoutSideEffects(try Self.play("live", "cam", "token=\(forged)")))
        #expect(refused.refusal == .denied("token refused"))
        #expect(refused.reason.hasPrefix("token: "))
        #expect(await admission.refusalWithoutSideEffects(try Self.play("live", "cam", "token=\(valid)")) == nil)
        // Only a JWT is worth waiting for: no token, or an HMAC one, is decided at once.
        #expect(admission.asksWithoutSideEffects(try Self.play("live", "cam", "token=\(forged)")))
        #expect(!admission.asksWithoutSideEffects(try Self.play("live", "cam", "")))
        #expect(!admission.asksWithoutSideEffects(try Self.play("other", "cam", "")))
        // The claims count: a play token does not publish.
        #expect(await admission.refusalWithoutSideEffects(try Self.publish("live", "cam", "token=\(valid)"))?.refusal.kind == .denied)
        // What is refused at once is refused the same way.
        #expect(await admission.refusalWithoutSideEffects(try Self.play("live", "cam", ""))?.reason == "token: no token")
    }

    @Test func tokensThatNeedNoKeyCollectionAreDecidedAtOnceAndAJWTIsLeftToTheAdmission() async throws {
        let admission = try await Self.admission(keys: nil)
        let path = try StreamPath(app: "live", name: "cam")
        let expires = Int64(Date().timeIntervalSince1970) + 600

        for (query, why) in [
            ("", "token: no token"),
            ("token=\(String(repeating: "0", count: 64))&expires=\(expires)", "token: the HMAC token does not match"),
            (Self.hmac(.play, path, expires: expires), "token: the HMAC token does not match"),
            (Self.hmac(.publish, path, expires: expires - 1200), "token: the HMAC token expired"),
        ] {
            let refused = admission.refusalWithoutWaiting(try Self.publish("live", "cam", query))
            #expect(refused?.refusal == .denied("token refused"), "publish with \(why)")
            #expect(refused?.reason == why)
        }
        #expect(admission.refusalWithoutWaiting(try Self.publish("live", "cam", Self.hmac(.publish, path, expires: expires))) == nil)
        #expect(admission.refusalWithoutWaiting(try Self.play("live", "cam", Self.hmac(.play, path, expires: expires))) == nil)
        #expect(admission.refusalWithoutWaiting(try Self.play("live", "cam", ""))?.reason == "token: no token")
        // A JWT (even a forged one) needs jwt-kit's key collection: the admission decides it.
        #expect(admission.refusalWithoutWaiting(try Self.play("live", "cam", "token=a.b.c")) == nil)
        #expect(await admission.play(try Self.play("live", "cam", "token=a.b.c")).result.failure?.kind == .denied)
        // An application without tokens: nothing to refuse.
        #expect(admission.refusalWithoutWaiting(try Self.publish("other", "cam", "")) == nil)
    }

    @Test func aRelayRefusesPublishersAndADrainingNodeEveryoneAtOnce() async throws {
        let registry = StreamRegistry(serializers: [])
        let relay = NodeAdmission(admission: nil, playback: Playback(registry: registry), logger: NodeAdmissionTests.logger)
        #expect(relay.refusalWithoutWaiting(try Self.publish("live", "cam", ""))?.refusal.kind == .badName)
        #expect(relay.refusalWithoutWaiting(try Self.play("live", "cam", "")) == nil)
        // Nothing to ask: a handshake does not wait for the admission.
        #expect(!relay.asksWithoutSideEffects(try Self.publish("live", "cam", "")))
        #expect(!relay.asksWithoutSideEffects(try Self.play("live", "cam", "")))

        let drain = NodeDrain(logger: NodeAdmissionTests.logger)
        let admission = try await Self.admission(keys: nil, draining: drain)
        #expect(admission.refusalWithoutWaiting(try Self.publish("other", "cam", "")) == nil)
        drain.begin(NodeDrain.Request(grace: .seconds(5), reconnectTo: nil, reason: "test"))
        #expect(admission.refusalWithoutWaiting(try Self.publish("other", "cam", ""))?.refusal.kind == .unavailable)
        #expect(admission.refusalWithoutWaiting(try Self.play("other", "cam", ""))?.refusal.kind == .unavailable)
    }
}

/// A policy in a hook's place that counts how often its full check is asked.
private final class CountingPolicy: AdmissionPolicy, Sendable {
    let asked = Mutex(0)

    func check(_ request: PublishRequest) async -> PolicyRefusal? {
        asked.withLock { $0 += 1 }
        return nil
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
