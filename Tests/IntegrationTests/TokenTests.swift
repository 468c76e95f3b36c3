import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// Issue 25, signed URLs: JWTs (HS256, RS256, ES256 from a JWKS file) and plain HMAC
    /// tokens, signed by `Tests/Peers/jwt_issuer.py` (Python's `cryptography`, nothing shared
    /// with the server), checked per application on RTMP, HTTP-FLV and HLS.
    @Suite("Signed URLs")
    struct TokenTests {
        static let hmacSecret = "hmac-secret-0123456789"
        static let jwtSecret = "jwt-secret-0123456789abcdef-0123456789"

        /// Runs the issuer and returns what it printed.
        static func issue(_ scenario: Scenario, _ arguments: [String]) async throws -> String {
            guard let peers = TestEnvironment.repositoryRoot?.appendingPathComponent("Tests/Peers") else { throw IntegrationFailure("Tests/Peers not found") }
            let run = try scenario.launch(executable: try TestEnvironment.python3(), [peers.appendingPathComponent("jwt_issuer.py").path] + arguments, name: "jwt-issuer")
            let ended = await run.waitForExit(timeout: .seconds(20))
            guard ended == .exited(0) else { throw IntegrationFailure("jwt_issuer.py \(arguments.first ?? ""): \(ended.map { "\($0)" } ?? "no exit") \(run.stderrText)") }
            return run.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        @Test("Without a valid token a publish is Denied and a play 403 (HTTP-FLV, HLS) or Play.Failed (RTMP); an RS256 JWT publishes (ffmpeg), ES256, HS256 and HMAC tokens play over HTTP-FLV, HLS (the playlists carry the token) and RTMP (on the name or on connect's application); expired, not-yet-valid, wrong action, wrong stream, unknown kid and tampered tokens are refused; a session whose token expires is kicked, or kept where configured")
        func signedURLs() async throws {
            try await Scenario.run("tokens") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let keys = scenario.directory.appendingPathComponent("keys")
                _ = try await Self.issue(scenario, ["keys", "--dir", keys.path])
                let now = Int(Date().timeIntervalSince1970)
                func jwt(_ alg: String, _ claims: [String: Any], kid: String? = nil) async throws -> String {
                    let json = String(decoding: try JSONSerialization.data(withJSONObject: claims), as: UTF8.self)
                    return try await Self.issue(scenario, ["jwt", "--dir", keys.path, "--alg", alg, "--secret", Self.jwtSecret, "--claims", json] + (kid.map { ["--kid", $0] } ?? []))
                }
                func hmac(_ action: String, _ stream: String, expires: Int) async throws -> String {
                    let token = try await Self.issue(scenario, ["hmac", "--secret", Self.hmacSecret, "--action", action, "--stream", stream, "--expires", String(expires)])
                    return "token=\(token)&expires=\(expires)"
                }

                let config = scenario.file("tokens.json")
                let settings: [String: Any] = [
                    "tokens": [
                        "live": ["hmacSecret": Self.hmacSecret, "jwtSecret": Self.jwtSecret, "jwksFile": keys.appendingPathComponent("jwks.json").path],
                        "keep": ["actions": ["play"], "jwtSecret": Self.jwtSecret, "onExpiry": "keep"],
                    ],
                    "adminToken": SessionsTests.token,
                ]
                try JSONSerialization.data(withJSONObject: settings).write(to: config)
                let node = try await scenario.startNode(label: "node", arguments: ["--config", config.path])

                // Publishing needs a token.
                let (_, bare) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "live", name: "cam")
                scenario.check(bare == "NetStream.Publish.Denied", "a publish without a token got \(bare)")
                let playOnly = try await jwt("RS256", ["exp": now + 600, "actions": ["play"]])
                let (_, wrongAction) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "live", name: "cam?token=\(playOnly)")
                scenario.check(wrongAction == "NetStream.Publish.Denied", "a publish with a play-only JWT got \(wrongAction)")
                let publishToken = try await jwt("RS256", ["exp": now + 600, "actions": ["publish"], "app": "live", "name": "cam"])
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "cam") + "?token=\(publishToken)", name: "publisher", loop: true)
                let live = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    ((try? await SessionsTests.sessions(node, "?kind=publish")) ?? []).contains { $0["path"] as? String == "live/cam" }
                }
                try scenario.require(live, "ffmpeg with an RS256 JWT is not publishing: \(publisher.stderrText.suffix(300))")
                scenario.check(node.log.contains("token: no token"), "the log does not say why the bare publish was refused")

                // Playing over HTTP-FLV: refused without, or with a bad token.
                let refusals: [(String, String)] = [
                    ("", "no token"),
                    ("?token=\(try await jwt("ES256", ["exp": now - 10]))", "an expired JWT"),
                    ("?token=\(try await jwt("ES256", ["exp": now + 600, "nbf": now + 300]))", "a JWT not valid yet"),
                    ("?token=\(try await jwt("ES256", ["exp": now + 600, "name": "other"]))", "a JWT for another stream"),
                    ("?token=\(try await jwt("ES256", ["exp": now + 600], kid: "unknown-kid"))", "a JWT with an unknown kid"),
                    ("?token=a.b.c", "a malformed JWT"),
                    ("?token=\(String(repeating: "0", count: 64))&expires=\(now + 600)", "a tampered HMAC token"),
                    ("?" + (try await hmac("publish", "live/cam", expires: now + 600)), "an HMAC token for publishing"),
                ]
                for (query, what) in refusals {
                    let response = try await HTTPClient.get(port: node.httpPort, path: "/live/cam.flv\(query)")
                    scenario.check(response.status == 403, "HTTP-FLV with \(what) answered \(response.status)")
                }

                // Valid tokens play.
                for (query, what) in [
                    ("?token=\(try await jwt("ES256", ["exp": now + 600, "actions": ["play"], "app": "live", "name": "cam"]))", "an ES256 JWT"),
                    ("?jwt=\(try await jwt("HS256", ["exp": now + 600]))", "an HS256 JWT as jwt="),
                    ("?" + (try await hmac("play", "live/cam", expires: now + 600)), "an HMAC token"),
                ] {
                    let viewer = try await HTTPFLVViewer.open(port: node.httpPort, path: "/live/cam.flv\(query)")
                    scenario.track(viewer.connection)
                    scenario.check(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "HTTP-FLV with \(what) got no media")
                    await viewer.close()
                }

                // HLS: the master playlist needs the token, and hands it on.
                let hlsToken = try await hmac("play", "live/cam", expires: now + 600)
                scenario.check(try await scenario.hlsGet(node, "/live/cam/index.m3u8").status == 403, "an HLS master playlist without a token was served")
                let master = try await scenario.hlsGet(node, "/live/cam/index.m3u8?\(hlsToken)")
                scenario.check(master.status == 200 && master.bodyText.contains(hlsToken), "the HLS master playlist with a token: \(master.status) \(master.bodyText.prefix(400))")
                try await Self.checkHLSMediaNeedsTheToken(scenario, node, token: hlsToken, otherStreamToken: try await jwt("RS256", ["exp": now + 600, "actions": ["publish"], "app": "live", "name": "cam2"]), media: media)

                // RTMP: the token on the stream name (ffprobe), and on connect's application.
                if let probe = try await scenario.probeLive(node.rtmpURL("live", "cam") + "?" + (try await hmac("play", "live/cam", expires: now + 600)), name: "rtmp-viewer", seconds: 3) {
                    scenario.checkLivePlayback(probe, "ffprobe over RTMP with an HMAC token", minVideoPackets: 40, width: media.width)
                } else {
                    scenario.check(false, "ffprobe over RTMP with an HMAC token failed")
                }
                let viaApp = try await RTMPRawClient.connect(port: node.rtmpPort)
                scenario.track(viaApp.connection)
                try await viaApp.plainHandshake()
                _ = try await viaApp.connect(app: "live?" + (try await hmac("play", "live/cam", expires: now + 600)))
                let appPlay = try await viaApp.play(name: "cam", streamID: try await viaApp.createStream())
                scenario.check(appPlay == "NetStream.Play.Reset" || appPlay == "NetStream.Play.Start", "RTMP play with the token on connect's application got \(appPlay)")
                let (bareRTMP, bareCode) = try await Self.rtmpPlay(scenario, node, name: "cam")
                scenario.check(bareCode == "NetStream.Play.Failed", "RTMP play without a token got \(bareCode)")
                await bareRTMP.close()

                // Expiry: kicked at its token's expiry here, kept in `keep`.
                let shortLived = try await HTTPFLVViewer.open(port: node.httpPort, path: "/live/cam.flv?" + (try await hmac("play", "live/cam", expires: Int(Date().timeIntervalSince1970) + 4)))
                scenario.track(shortLived.connection)
                scenario.check(await shortLived.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(5)), "the short-lived viewer got no media")
                let kicked = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { shortLived.isClosed }
                scenario.check(kicked && node.log.contains("token expired"), "a viewer whose token expired was not kicked")

                let keepPublisher = try scenario.publish(media, to: node.rtmpURL("keep", "cam"), name: "keep-publisher", loop: true)
                let keepLive = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    ((try? await SessionsTests.sessions(node, "?kind=publish")) ?? []).contains { $0["path"] as? String == "keep/cam" }
                }
                try scenario.require(keepLive, "the keep/cam publisher (no token needed to publish there) is not live: \(keepPublisher.stderrText.suffix(300))")
                let kept = try await HTTPFLVViewer.open(port: node.httpPort, path: "/keep/cam.flv?token=\(try await jwt("HS256", ["exp": Int(Date().timeIntervalSince1970) + 3]))")
                scenario.track(kept.connection)
                scenario.check(await kept.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(5)), "the kept viewer got no media")
                try await Task.sleep(for: .seconds(6))
                let before = kept.receivedBytes
                try await Task.sleep(for: .seconds(1))
                scenario.check(!kept.isClosed && kept.receivedBytes > before, "a viewer of an application that keeps sessions was dropped after its token expired")
                await kept.close()
                _ = await keepPublisher.stop()
                _ = await publisher.stop()
            }
        }

        static func rtmpPlay(_ scenario: Scenario, _ node: NodeProcess, name: String) async throws -> (RTMPRawClient, String) {
            let client = try await RTMPRawClient.connect(port: node.rtmpPort)
            scenario.track(client.connection)
            try await client.plainHandshake()
            _ = try await client.connect(app: "live")
            return (client, try await client.play(name: name, streamID: try await client.createStream()))
        }

        /// A player that skips the master (given a media playlist's URL directly, or guessing a
        /// segment's) needs the token too: without it 403; with it one session stands for its
        /// reloads, and the URIs it is given carry the session and the token. A session of one
        /// stream opens no other (`live/cam2`, published here with `otherStreamToken`).
        static func checkHLSMediaNeedsTheToken(_ scenario: Scenario, _ node: NodeProcess, token: String, otherStreamToken: String, media: MediaFile) async throws {
            let direct = "/live/cam/src/index.m3u8"
            let bare = try await scenario.hlsGet(node, direct)
            scenario.check(bare.status == 403, "a media playlist asked for directly without a token answered \(bare.status)")
            let first = try await scenario.hlsGet(node, "\(direct)?\(token)")
            try scenario.require(first.status == 200, "a media playlist asked for directly with a token answered \(first.status)")
            let playlist = try MediaPlaylist.parse(first.bodyText)
            let id = try #require(HLSQueries.session(playlist.uriQueries), "the direct media playlist's URIs carry no single session: \(first.bodyText)")
            scenario.check(playlist.uriQueries == ["session=\(id)&\(token)"], "the direct media playlist's URI queries: \(playlist.uriQueries)")
            // A reload of the same URL is the same player: the same session, not a new one.
            let reload = try MediaPlaylist.parse(try await scenario.hlsGet(node, "\(direct)?\(token)").bodyText)
            scenario.check(HLSQueries.session(reload.uriQueries) == id, "a reload of the direct media playlist opened another session: \(reload.uriQueries)")
            let segment = try #require(playlist.complete.last)
            let segmentPath = "/live/cam/src/seg\(segment.sequence).ts"
            scenario.check(try await scenario.hlsGet(node, segmentPath).status == 403, "a segment asked for without a token or a session was served")
            scenario.check(try await scenario.hlsGet(node, "\(segmentPath)?\(token)").status == 200, "a segment asked for with the token was refused")
            let ofSession = try await scenario.hlsGet(node, "\(segmentPath)?session=\(id)")
            scenario.check(ofSession.status == 200 && ofSession.body.count > 10_000, "a segment of the direct player's session: \(ofSession.status), \(ofSession.body.count) bytes")
            let hls = (try? await SessionsTests.sessions(node, "?protocol=hls")) ?? []
            scenario.check(hls.contains { $0["id"] as? String == id && $0["path"] as? String == "live/cam" }, "the direct player's session is not listed: \(hls)")
            // A player given that URL (PyAV's FFmpeg, from the same address) stays 30 s on it,
            // reloading it: every picture decoded, and all the while the one session.
            let player = try scenario.launch(
                executable: try TestEnvironment.python3(), [try EnhancedRTMPTests.peer("pyav_watch.py"), "\(node.httpBase)\(direct)?\(token)", "30"], name: "pyav-direct-hls"
            )
            try await EnhancedRTMPTests.checkStayed(scenario, player, "a direct media playlist (HLS)", width: media.width ?? 640, height: media.height ?? 360,
                                                    minDecoded: 700, maxWait: EnhancedRTMPTests.hlsMaxWait)
            let after = ((try? await SessionsTests.sessions(node, "?protocol=hls")) ?? []).filter { $0["path"] as? String == "live/cam" }
            scenario.check(after.map { $0["id"] as? String } == [id], "after 30 s of a direct player, live/cam's HLS sessions: \(after.map { $0["id"] ?? "" })")

            // Another stream behind a token of its own: the session of live/cam opens none of it.
            _ = try scenario.publish(media, to: node.rtmpURL("live", "cam2") + "?token=\(otherStreamToken)", name: "publisher-cam2", loop: true)
            let segmented = await eventually(timeout: .seconds(20), interval: .milliseconds(250)) {
                (try? await scenario.hlsGet(node, "/live/cam2/src/index.m3u8?session=\(id)").status) == 403
            }
            scenario.check(segmented, "live/cam2's media playlist, asked for with live/cam's session and no token of its own, was not refused")
            scenario.check(try await scenario.hlsGet(node, "/live/cam2/src/index.m3u8?session=\(id)&\(token)").status == 403,
                           "live/cam2's media playlist was served with live/cam's session and token")
        }

        @Test("Keys from a JWKS URL: an RS256 JWT plays once the provider's JWKS is fetched; while the URL is down a JWT is refused as unavailable (503, logged with the URL) and --check-config fails naming it; once the URL answers, the same JWT plays without a restart; a kid it lacks is refused")
        func jwksFromAURL() async throws {
            try await Scenario.run("tokens-jwks-url") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let keys = scenario.directory.appendingPathComponent("idp")
                _ = try await Self.issue(scenario, ["keys", "--dir", keys.path])
                let port = try await FreePorts.allocate(1)[0]
                let url = "http://127.0.0.1:\(port)/jwks.json"
                let config = scenario.file("jwks-url.yaml")
                try Data("""
                adminToken: \(SessionsTests.token)
                tokens:
                  live: {actions: [play], jwksURL: "\(url)"}
                """.utf8).write(to: config)
                // The provider is down: the check says so, the node starts anyway.
                try await scenario.checkConfigFails(["--config", config.path], saying: "tokens.live: jwksURL: \(url) cannot be reached")
                let node = try await scenario.startNode(label: "node", arguments: ["--config", config.path])
                scenario.check(node.log.contains("tokens.live.jwksURL"), "the failed first fetch is not logged")
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "publisher", loop: true)
                let live = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    ((try? await SessionsTests.sessions(node, "?kind=publish")) ?? []).contains { $0["path"] as? String == "live/cam" }
                }
                try scenario.require(live, "ffmpeg is not publishing: \(publisher.stderrText.suffix(300))")
                let now = Int(Date().timeIntervalSince1970)
                let claims = String(decoding: try JSONSerialization.data(withJSONObject: ["exp": now + 600]), as: UTF8.self)
                let token = try await Self.issue(scenario, ["jwt", "--dir", keys.path, "--alg", "RS256", "--claims", claims])
                let down = try await HTTPClient.get(port: node.httpPort, path: "/live/cam.flv?token=\(token)")
                scenario.check(down.status == 503, "with the JWKS URL down a JWT got \(down.status), expected 503")
                scenario.check(node.log.contains("the JWKS at \(url) cannot be reached"), "the log does not say the JWKS URL cannot be reached")

                // The provider comes up: the same token plays, no restart.
                let server = try scenario.launch(executable: try TestEnvironment.python3(), ["-m", "http.server", "--bind", "127.0.0.1", "--directory", keys.path, String(port)], name: "idp")
                let served = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    (try? await HTTPClient.get(port: port, path: "/jwks.json", timeout: .seconds(1)))?.status == 200
                }
                try scenario.require(served, "the JWKS server did not start: \(server.stderrText.suffix(300))")
                let plays = await eventually(timeout: .seconds(15), interval: .milliseconds(500)) {
                    guard let viewer = try? await HTTPFLVViewer.open(port: node.httpPort, path: "/live/cam.flv?token=\(token)") else { return false }
                    defer { Task { await viewer.close() } }
                    return await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(3))
                }
                scenario.check(plays, "once the JWKS URL answered, the JWT still did not play")
                let unknown = try await Self.issue(scenario, ["jwt", "--dir", keys.path, "--alg", "RS256", "--claims", claims, "--kid", "rotated-away"])
                let refused = try await HTTPClient.get(port: node.httpPort, path: "/live/cam.flv?token=\(unknown)")
                scenario.check(refused.status == 403, "a JWT with a kid the JWKS lacks got \(refused.status)")
                try await scenario.checkConfigPasses(yaml: String(decoding: try Data(contentsOf: config), as: UTF8.self))
            }
        }

        @Test("--check-config refuses a token configuration without a secret or keys, a short secret (HS256 under 32 bytes), an unknown action, a JWKS file that is not JSON, and an unknown key, naming it")
        func badTokenConfigurations() async throws {
            try await Scenario.run("tokens-config") { scenario in
                let notJSON = scenario.file("jwks.txt")
                try Data("not json".utf8).write(to: notJSON)
                for (json, expected) in [
                    (#"{"tokens": {"live": {"actions": ["play"]}}}"#, "tokens.live: needs hmacSecret, jwtSecret, jwksFile or jwksURL"),
                    (#"{"tokens": {"live": {"jwksURL": "ftp://idp/jwks.json"}}}"#, "tokens.live.jwksURL: expected an http:// or https:// URL"),
                    (#"{"tokens": {"live": {"hmacSecret": "short"}}}"#, "tokens.live.hmacSecret must be at least 16 bytes"),
                    (#"{"tokens": {"live": {"jwtSecret": "0123456789abcdef"}}}"#, "tokens.live.jwtSecret must be at least 32 bytes"),
                    (#"{"tokens": {"live": {"hmacSecret": "0123456789abcdef", "actions": ["watch"]}}}"#, "tokens.live.actions: expected play or publish"),
                    ("{\"tokens\": {\"live\": {\"jwksFile\": \"\(notJSON.path)\"}}}", "tokens.live.jwksFile"),
                    (#"{"tokens": {"live": {"hmacSecret": "0123456789abcdef", "onExpiry": "wait"}}}"#, "tokens.live.onExpiry: expected kick or keep"),
                    (#"{"tokens": {"live": {"hmacSecret": "0123456789abcdef", "jwks": "x"}}}"#, "unknown key 'tokens.live.jwks'"),
                ] {
                    try await scenario.checkConfigFails(json: json, saying: expected)
                }
            }
        }
    }
}
