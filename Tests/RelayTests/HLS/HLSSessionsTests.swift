import Media
import NIOCore
import Relay
import Session
import Synchronization
import Testing

/// `HLSSessions`: requests that name no session (a media playlist or segment URL given to a
/// player directly) are admitted as their client, once, and a session of one stream opens
/// no other's.
@Suite struct HLSSessionsTests {
    /// Admits a play when its query carries `token=good`; counts the requests it was asked.
    final class TokenAdmission: ImmediateSessionAdmission, Sendable {
        let asked = Atomic<Int>(0)
        /// Sessions started and ended, as the node's observers (a hook's `on_play`, `on_stop`) see them.
        let started = Atomic<Int>(0)
        let ended = Atomic<Int>(0)
        let hub = StreamHub(path: try! StreamPath(app: "live", name: "cam"), serializers: [])  // literal, valid by construction

        func publishImmediately(_ request: PublishRequest) -> PublishAnswer { .refused(.unavailable("no publishing here")) }

        func playImmediately(_ request: PlayRequest) -> PlayAnswer {
            asked.add(1, ordering: .relaxed)
            guard request.query.value(for: "token") == "good" else { return .refused(.denied("token refused")) }
            return .accepted(PlaySession(id: request.sessionID, hub: hub, transport: .hls, remoteAddress: request.remoteAddress, sink: { [self] event in
                switch event {
                case .playStarted: started.add(1, ordering: .relaxed)
                case .playEnded: ended.add(1, ordering: .relaxed)
                default: break
                }
            }))
        }
    }

    static let stream = try! StreamPath(app: "live", name: "cam")  // literal, valid by construction
    static let rendition = RequestedRendition(.source(stream))

    @Test func theHostOfAnAddressIsWithoutItsPort() {
        #expect(HLSSessions.host(of: "10.0.0.2:6000") == "10.0.0.2")
        // As the HTTP routes write an IPv6 peer (`PlaybackRoutes.describe`): unbracketed.
        #expect(HLSSessions.host(of: "2001:db8::1:6000") == "2001:db8::1")
        #expect(HLSSessions.host(of: "::ffff:10.0.0.2:6000") == "::ffff:10.0.0.2")
        #expect(HLSSessions.host(of: "[2001:db8::1]:6000") == "[2001:db8::1]")
        #expect(HLSSessions.host(of: "unix") == "unix")
        #expect(HLSSessions.host(of: "") == "")
        // Another connection of one IPv6 client is the same client.
        #expect(HLSSessions.clientKey(remoteAddress: "2001:db8::1:6000", path: Self.rendition, carried: "")
            == HLSSessions.clientKey(remoteAddress: "2001:db8::1:6001", path: Self.rendition, carried: ""))
    }

    @Test func aClientIsAdmittedOnceForItsRequestsAndRefusedWithoutItsToken() async throws {
        let admission = TokenAdmission()
        let sessions = HLSSessions(idleLimit: .seconds(6))
        sessions.setAdmission(admission)
        // The same client from another port (a new connection) with the same URL: one session.
        let client = HLSSessions.clientKey(remoteAddress: "10.0.0.2:6000", path: Self.rendition, carried: "token=good")
        let again = HLSSessions.clientKey(remoteAddress: "10.0.0.2:6001", path: Self.rendition, carried: "token=good")
        #expect(client == again)
        guard case .success(let first) = await sessions.session(ofClient: client, Self.rendition, query: StreamQuery("token=good"), remoteAddress: "10.0.0.2:6000"),
              case .success(let second) = await sessions.session(ofClient: again, Self.rendition, query: StreamQuery("token=good"), remoteAddress: "10.0.0.2:6001")
        else {
            Issue.record("a client with a good token was refused")
            return
        }
        #expect(first == second && sessions.count == 1 && admission.asked.load(ordering: .relaxed) == 1)
        // Without the token, another client: asked, and refused.
        let bare = HLSSessions.clientKey(remoteAddress: "10.0.0.2:6000", path: Self.rendition, carried: "")
        guard case .failure(let refusal) = await sessions.session(ofClient: bare, Self.rendition, query: StreamQuery(""), remoteAddress: "10.0.0.2:6000") else {
            Issue.record("a client without a token was admitted")
            return
        }
        #expect(refusal.description.contains("token"))
        #expect(sessions.count == 1)
        // The session is of live/cam: it names no session of another stream.
        #expect(sessions.lookup(first, stream: Self.stream) == .live)
        #expect(sessions.lookup(first, stream: try StreamPath(app: "live", name: "other")) == .unknown)
        // Expired, the client is admitted afresh, with a new session.
        await sessions.expire(now: .now + .seconds(7))
        #expect(sessions.count == 0)
        guard case .success(let third) = await sessions.session(ofClient: client, Self.rendition, query: StreamQuery("token=good"), remoteAddress: "10.0.0.2:6000") else {
            Issue.record("an expired client with a good token was refused")
            return
        }
        #expect(third != first && admission.asked.load(ordering: .relaxed) == 3)
    }

    @Test func requestsOfOneClientAtOnceShareOneSession() async throws {
        let admission = TokenAdmission()
        let sessions = HLSSessions(idleLimit: .seconds(6))
        sessions.setAdmission(admission)
        let client = HLSSessions.clientKey(remoteAddress: "10.0.0.2:6000", path: Self.rendition, carried: "token=good")
        let ids = await withTaskGroup(of: String?.self) { group in
            for port in 0..<8 {
                group.addTask {
                    guard case .success(let id) = await sessions.session(ofClient: client, Self.rendition, query: StreamQuery("token=good"), remoteAddress: "10.0.0.2:\(6000 + port)") else { return nil }
                    return id
                }
            }
            var ids: Set<String?> = []
            for await id in group { ids.insert(id) }
            return ids
        }
        #expect(ids.count == 1 && !ids.contains(nil))
        #expect(sessions.count == 1)
        // Every session the admission accepted and the table did not keep was started and
        // ended: a hook's on_play is closed by an on_stop; one is live.
        // (An end reaches the observers from a task of its own: waited for, bounded.)
        let asked = admission.asked.load(ordering: .relaxed)
        for _ in 0..<100 where admission.ended.load(ordering: .relaxed) < asked - 1 {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(admission.started.load(ordering: .relaxed) == asked)
        #expect(admission.ended.load(ordering: .relaxed) == asked - 1)
    }

    @Test func theCapCountsAClientHostAsOneHostHasIt() {
        #expect(HLSSessions.clientHost(of: "10.0.0.2:6000") == "10.0.0.2")
        // IPv4-mapped: the same client as over IPv4.
        #expect(HLSSessions.clientHost(of: "::ffff:10.0.0.2:6000") == "10.0.0.2")
        // IPv6 by its /64: one host draws an address from it per request.
        #expect(HLSSessions.clientHost(of: "2001:db8:0:1:aaaa::1:6000") == "2001:db8:0:1::/64")
        #expect(HLSSessions.clientHost(of: "2001:db8:0:1:bbbb:cccc:dddd:2:6001") == "2001:db8:0:1::/64")
        #expect(HLSSessions.clientHost(of: "[2001:db8::1]:6000") == "2001:db8:0:0::/64")
        #expect(HLSSessions.clientHost(of: "fe80::1%eth0:6000") == "fe80:0:0:0::/64")
        #expect(HLSSessions.clientHost(of: "unix") == "unix")
    }

    @Test func aSessionStandsForItsOwnHostOnly() async throws {
        let admission = TokenAdmission()
        let sessions = HLSSessions(idleLimit: .seconds(6))
        sessions.setAdmission(admission)
        guard case .success(let id) = await sessions.open(Self.rendition, query: StreamQuery("token=good"), remoteAddress: "10.0.0.2:6000") else {
            Issue.record("a player with a good token was refused")
            return
        }
        #expect(sessions.lookup(id, stream: Self.stream, remoteAddress: "10.0.0.2:6001") == .live)
        // Its URL passed to another host: admitted afresh there, not one viewer for both.
        #expect(sessions.lookup(id, stream: Self.stream, remoteAddress: "10.0.0.3:6000") == .unknown)
    }

    @Test func oneHostOpensNoMoreSessionsThanItsCapAndOthersStillGetIn() async throws {
        let admission = TokenAdmission()
        let sessions = HLSSessions(idleLimit: .seconds(6), limits: ConnectionLimits(maxConnectionsPerAddress: 3))
        sessions.setAdmission(admission)
        // Three masters from one host (three ports, another query each) are three sessions.
        var opened: [String] = []
        for index in 0..<3 {
            guard case .success(let id) = await sessions.open(Self.rendition, query: StreamQuery("token=good&n=\(index)"), remoteAddress: "10.0.0.2:\(6000 + index)") else {
                Issue.record("session \(index) of a host under its cap was refused")
                return
            }
            opened.append(id)
        }
        // The fourth is refused as unavailable (503), before the admission is asked, and so
        // is one that names no session (a media playlist asked directly).
        guard case .failure(let refusal) = await sessions.open(Self.rendition, query: StreamQuery("token=good&n=3"), remoteAddress: "10.0.0.2:6100") else {
            Issue.record("a fourth session of a host with a cap of 3 was opened")
            return
        }
        #expect(refusal.kind == .unavailable && refusal.description.contains("this address"))
        let client = HLSSessions.clientKey(remoteAddress: "10.0.0.2:6101", path: Self.rendition, carried: "token=good&n=4")
        guard case .failure = await sessions.session(ofClient: client, Self.rendition, query: StreamQuery("token=good&n=4"), remoteAddress: "10.0.0.2:6101") else {
            Issue.record("a client of a host at its cap was opened a session")
            return
        }
        #expect(admission.asked.load(ordering: .relaxed) == 3)
        // The same client over an IPv4-mapped address is the same host.
        guard case .failure = await sessions.open(Self.rendition, query: StreamQuery("token=good&n=5"), remoteAddress: "::ffff:10.0.0.2:6000") else {
            Issue.record("an IPv4-mapped address of a host at its cap was opened a session")
            return
        }
        // An IPv6 /64 is one host: three addresses of it open three sessions, the fourth none.
        for index in 1...3 {
            guard case .success = await sessions.open(Self.rendition, query: StreamQuery("token=good"), remoteAddress: "2001:db8:0:7::\(index):6000") else {
                Issue.record("IPv6 address \(index) of a /64 under its cap was refused")
                return
            }
        }
        guard case .failure = await sessions.open(Self.rendition, query: StreamQuery("token=good"), remoteAddress: "2001:db8:0:7::99:6000") else {
            Issue.record("a fourth address of one /64 was opened a session")
            return
        }
        // Another host still gets in; so does loopback, which is exempt by default (a local
        // proxy brings every player from 127.0.0.1).
        guard case .success = await sessions.open(Self.rendition, query: StreamQuery("token=good"), remoteAddress: "2001:db8::1:6000"),
              case .success = await sessions.open(Self.rendition, query: StreamQuery("token=good"), remoteAddress: "127.0.0.1:6000"),
              case .success = await sessions.open(Self.rendition, query: StreamQuery("token=good&n=1"), remoteAddress: "127.0.0.1:6001"),
              case .success = await sessions.open(Self.rendition, query: StreamQuery("token=good&n=2"), remoteAddress: "127.0.0.1:6002"),
              case .success = await sessions.open(Self.rendition, query: StreamQuery("token=good&n=3"), remoteAddress: "127.0.0.1:6003")
        else {
            Issue.record("another host, or loopback, was refused")
            return
        }
        // With `limitLoopback`, loopback is held to the cap too.
        sessions.setLimits(ConnectionLimits(maxConnectionsPerAddress: 3, limitLoopback: true))
        guard case .failure = await sessions.open(Self.rendition, query: StreamQuery("token=good&n=4"), remoteAddress: "127.0.0.1:6004") else {
            Issue.record("a fifth loopback session was opened with limitLoopback")
            return
        }
        // A session that ends gives its host's slot back.
        await sessions.expire(now: .now + .seconds(7))
        #expect(sessions.count == 0)
        guard case .success = await sessions.open(Self.rendition, query: StreamQuery("token=good&n=5"), remoteAddress: "10.0.0.2:6200") else {
            Issue.record("after its sessions expired, a host was still refused")
            return
        }
    }
}
