import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// Issue 24, first slice: every publisher and viewer is a session an operator can list
    /// and kick, on every node, behind the admin token.
    @Suite("Sessions")
    struct SessionsTests {
        static let token = "sessions-secret"

        static func sessions(_ node: NodeProcess, _ query: String = "") async throws -> [[String: Any]] {
            let (status, json) = try await node.admin("/api/v1/sessions\(query)", token: Self.token)
            guard status == 200 else { throw IntegrationFailure("GET /api/v1/sessions\(query) answered \(status)") }
            return json["sessions"] as? [[String: Any]] ?? []
        }

        static func kick(_ node: NodeProcess, _ id: String) async throws -> Int {
            try await HTTPClient.request(
                "DELETE", port: node.adminPort, path: "/api/v1/sessions/\(id)?reason=maintenance",
                headers: ["Authorization": "Bearer \(Self.token)"]
            ).status
        }

        @Test("An ffmpeg publisher, an RTMP viewer (ffmpeg) and an HTTP-FLV viewer (curl) are listed with their protocol, path, address, redacted query and growing bytes; each kicked one ends as its client sees it and leaves the list")
        func listAndKick() async throws {
            try await Scenario.run("sessions") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let node = try await scenario.startNode(label: "node", arguments: ["--admin-token", Self.token])
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "cam") + "?key=not-for-logs", name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "cam")
                let rtmpViewer = try scenario.launch("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "warning", "-i", node.rtmpURL("live", "cam"), "-f", "null", "-"], name: "rtmp-viewer")
                let flvFile = scenario.file("curl.flv")
                let curl = try scenario.launch("curl", ["-sS", "-o", flvFile.path, node.flvURL("live", "cam")], name: "curl-viewer")

                // Unauthorised, unknown and malformed ids.
                let (unauthorised, _) = try await node.admin("/api/v1/sessions", token: nil)
                scenario.check(unauthorised == 401, "GET /api/v1/sessions without the token answered \(unauthorised)")
                scenario.check(try await Self.kick(node, "v-0000000000000000") == 404, "kicking an unknown session did not answer 404")
                scenario.check(try await Self.kick(node, "nonsense") == 404, "kicking a malformed id did not answer 404")

                var listed: [[String: Any]] = []
                let allThere = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    listed = (try? await Self.sessions(node)) ?? []
                    return listed.count == 3
                }
                try scenario.require(allThere, "expected 3 sessions, listed \(listed)")
                func find(_ kind: String, _ proto: String) -> [String: Any]? {
                    listed.first { $0["kind"] as? String == kind && $0["protocol"] as? String == proto }
                }
                let published = try #require(find("publish", "rtmp"), "no RTMP publisher listed: \(listed)")
                let rtmpPlay = try #require(find("play", "rtmp"), "no RTMP viewer listed: \(listed)")
                let flvPlay = try #require(find("play", "http-flv"), "no HTTP-FLV viewer listed: \(listed)")
                for session in [published, rtmpPlay, flvPlay] {
                    scenario.check(session["path"] as? String == "live/cam", "path \(session["path"] ?? "nil")")
                    scenario.check((session["remoteAddress"] as? String)?.hasPrefix("127.0.0.1:") == true, "remote address \(session["remoteAddress"] ?? "nil")")
                    scenario.check(session["startedAt"] is String, "no startedAt in \(session)")
                }
                scenario.check(published["query"] as? String == "key=…", "the publisher's query is shown as \(published["query"] ?? "nil"), expected key=…")
                scenario.check(!(String(data: try JSONSerialization.data(withJSONObject: listed), encoding: .utf8) ?? "").contains("not-for-logs"), "the key's value is in the listing")

                // Bytes grow: in for the publisher, out for the viewers.
                try await Task.sleep(for: .seconds(2))
                let later = try await Self.sessions(node)
                for (before, field) in [(published, "bytesIn"), (rtmpPlay, "bytesOut"), (flvPlay, "bytesOut")] {
                    let id = before["id"] as? String
                    let now = later.first { $0["id"] as? String == id }
                    let a = before[field] as? Int ?? 0
                    let b = now?[field] as? Int ?? 0
                    scenario.check(b > a && b > 100_000, "\(before["protocol"] ?? "") \(before["kind"] ?? ""): \(field) \(a) → \(b) in 2 s")
                }
                // Filters and one session by id.
                scenario.check(try await Self.sessions(node, "?kind=play").count == 2, "kind=play does not list the two viewers")
                scenario.check(try await Self.sessions(node, "?protocol=http-flv").count == 1, "protocol=http-flv does not list the one curl")
                scenario.check(try await Self.sessions(node, "?path=live/other").isEmpty, "path=live/other lists sessions")
                let (single, one) = try await node.admin("/api/v1/sessions/\(flvPlay["id"] as? String ?? "")", token: Self.token)
                scenario.check(single == 200 && one["protocol"] as? String == "http-flv", "GET /api/v1/sessions/{id}: \(single) \(one)")

                // Kicking: curl's response ends with its last chunk (curl exits 0), ffmpeg's viewer
                // and publisher exit, and each leaves the list.
                scenario.check(try await Self.kick(node, flvPlay["id"] as? String ?? "") == 202, "kicking the curl viewer")
                let curlEnd = await curl.waitForExit(timeout: .seconds(5))
                scenario.check(curlEnd == .exited(0), "curl after the kick: \(curlEnd.map { "\($0)" } ?? "still running"): \(curl.stderrText)")
                scenario.check(try await Self.kick(node, rtmpPlay["id"] as? String ?? "") == 202, "kicking the RTMP viewer")
                let viewerEnd = await rtmpViewer.waitForExit(timeout: .seconds(5))
                scenario.check(viewerEnd != nil, "the RTMP viewer still runs 5 s after its kick")
                // ffmpeg asks getStreamLength before playing and reads a number back.
                scenario.check(!rtmpViewer.stderrText.contains("getStreamLength"), "the RTMP viewer: \(rtmpViewer.stderrText.prefix(400))")
                scenario.check(try await Self.kick(node, published["id"] as? String ?? "") == 202, "kicking the publisher")
                let publisherEnd = await publisher.waitForExit(timeout: .seconds(5))
                scenario.check(publisherEnd != nil && publisherEnd != .exited(0), "the publisher after its kick: \(publisherEnd.map { "\($0)" } ?? "still running")")
                scenario.check(publisher.stderrText.contains("kicked by an operator: maintenance"), "ffmpeg was not told why: \(publisher.stderrText.suffix(400))")
                let gone = await eventually(timeout: .seconds(5), interval: .milliseconds(200)) {
                    (try? await Self.sessions(node))?.isEmpty == true
                }
                let remaining = (try? await Self.sessions(node)) ?? []
                scenario.check(gone, "sessions still listed after the kicks: \(remaining)")
                let log = node.log
                scenario.check(log.contains("publisher session ended") && log.contains("kicked: maintenance"), "the log does not say the publisher was kicked")
                scenario.check(log.contains("viewer session started"), "a viewer's arrival is not logged")
                scenario.check(!log.contains("not-for-logs"), "the stream key is in the log")
            }
        }

        @Test("An HLS player is a session: admitted at its first playlist request, its id in every URI it is given (with its token), listed with growing bytes and counted by the drain; a kick makes its next request 403; it ends three target durations after its last request")
        func hlsSessions() async throws {
            try await Scenario.run("sessions-hls") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let node = try await scenario.startNode(label: "node", arguments: ["--admin-token", Self.token])
                _ = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "cam")
                _ = try await scenario.waitForSegments(node, "/live/cam", count: 2)

                // A real player, 30 s: one session for all its requests, its bytes growing.
                let player = try scenario.launch("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "warning", "-i", "http://127.0.0.1:\(node.httpPort)/live/cam/index.m3u8", "-t", "30", "-f", "null", "-"], name: "hls-player")
                var hls: [[String: Any]] = []
                let listed = await eventually(timeout: .seconds(10), interval: .milliseconds(250)) {
                    hls = (try? await Self.sessions(node, "?protocol=hls")) ?? []
                    return hls.count == 1 && (hls.first?["bytesOut"] as? Int ?? 0) > 50_000
                }
                scenario.check(listed, "the HLS player is not one session with bytes: \(hls)")
                scenario.check(hls.first?["path"] as? String == "live/cam" && hls.first?["kind"] as? String == "play", "the HLS session: \(hls)")
                let (_, drain) = try await node.admin("/api/v1/node/drain", token: Self.token)
                scenario.check((drain["viewers"] as? Int ?? 0) >= 1, "the drain does not count the HLS player: \(drain)")
                // While it plays, every second: the same one session (never expired and opened
                // again), its bytes growing.
                let firstID = hls.first?["id"] as? String
                var lastBytes = 0
                var samples = 0
                while player.isRunning, samples < 40 {
                    try await Task.sleep(for: .seconds(1))
                    let now = (try? await Self.sessions(node, "?protocol=hls")) ?? []
                    guard player.isRunning else { break }
                    samples += 1
                    scenario.check(now.count == 1 && now.first?["id"] as? String == firstID, "second \(samples): the player's sessions are \(now.map { $0["id"] ?? "?" })")
                    let bytes = now.first?["bytesOut"] as? Int ?? 0
                    scenario.check(bytes >= lastBytes, "second \(samples): the session's bytes went from \(lastBytes) to \(bytes)")
                    lastBytes = bytes
                }
                scenario.check(samples >= 20, "the HLS player played only \(samples) s")
                let playerEnd = await player.waitForExit(timeout: .seconds(40))
                scenario.check(playerEnd == .exited(0), "the HLS player: \(playerEnd.map { "\($0)" } ?? "still running") \(player.stderrText.suffix(300))")
                // Three target durations (6 s) after its last request, it has left.
                let expired = await eventually(timeout: .seconds(12), interval: .milliseconds(500)) {
                    ((try? await Self.sessions(node, "?protocol=hls")) ?? [["x": 1]]).isEmpty
                }
                scenario.check(expired, "the HLS session outlived its player by more than 12 s")

                // Request by request: the master opens a session, every URI names it and carries
                // the token the request came with.
                let master = try await scenario.hlsGet(node, "/live/cam/index.m3u8?token=abc")
                try scenario.require(master.status == 200, "the master answered \(master.status)")
                let parsed = try MasterPlaylist.parse(master.bodyText)
                let id = try #require(HLSQueries.session(parsed.uriQueries), "the master's URIs carry no single session: \(master.bodyText)")
                scenario.check(parsed.uriQueries == ["session=\(id)&token=abc"], "the master's URI queries: \(parsed.uriQueries)")
                let mediaResponse = try await scenario.hlsGet(node, "/live/cam/src/index.m3u8?session=\(id)&token=abc")
                let mediaPlaylist = try MediaPlaylist.parse(mediaResponse.bodyText)
                scenario.check(mediaPlaylist.uriQueries == ["session=\(id)&token=abc"], "the media playlist's URI queries: \(mediaPlaylist.uriQueries)")
                let segment = try #require(mediaPlaylist.complete.last)
                let segmentPath = "/live/cam/src/seg\(segment.sequence).ts?session=\(id)"
                scenario.check(try await scenario.hlsGet(node, segmentPath).status == 200, "a segment of the session")
                scenario.check(try await Self.sessions(node, "?protocol=hls").map { $0["id"] as? String } == [id], "the session is not listed")
                scenario.check(try await Self.kick(node, id) == 202, "kicking the HLS session")
                scenario.check(try await scenario.hlsGet(node, "/live/cam/src/index.m3u8?session=\(id)").status == 403, "the kicked session's next playlist request was not refused")
                scenario.check(try await scenario.hlsGet(node, segmentPath).status == 403, "the kicked session's next segment request was not refused")
                scenario.check(try await Self.sessions(node, "?protocol=hls").isEmpty, "the kicked session is still listed")
                // A media playlist asked for directly is a player too: admitted, with a session
                // its URIs name, listed, and the same one for its reloads.
                let direct = try await scenario.hlsGet(node, "/live/cam/src/index.m3u8")
                let directID = HLSQueries.session(try MediaPlaylist.parse(direct.bodyText).uriQueries)
                scenario.check(direct.status == 200 && directID != nil && directID != id, "a direct media playlist request: \(direct.status) \(direct.bodyText.prefix(300))")
                let reloaded = try await scenario.hlsGet(node, "/live/cam/src/index.m3u8")
                scenario.check(HLSQueries.session(try MediaPlaylist.parse(reloaded.bodyText).uriQueries) == directID, "a reload of the direct media playlist opened another session")
                scenario.check(try await Self.sessions(node, "?protocol=hls").map { $0["id"] as? String } == [directID], "the direct player's session is not the one listed")
            }
        }

        @Test("A transcoder's rungs and a static pull are publishing sessions (protocols transcode and pull) with their paths and growing bytes, in the stream's detail too; they leave the list when their stream ends")
        func rungsAndPullsAreSessions() async throws {
            try await Scenario.run("sessions-rungs") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let origin = try await scenario.startNode(label: "origin")
                _ = try scenario.publish(media, to: origin.rtmpURL("live", "cam"), name: "origin-publisher", loop: true)
                try await scenario.waitUntilLive(origin, "live", "cam")
                let node = try await scenario.startNode(
                    NodeConfig(
                        ladders: ["abr": [NodeConfig.Rung(name: "360p", height: 360, videoBitRate: 600_000), NodeConfig.Rung(name: "240p", height: 240, videoBitRate: 300_000)]],
                        pulls: ["live": ["mirror": origin.flvURL("live", "cam")]]
                    ),
                    label: "node", arguments: ["--admin-token", Self.token]
                )
                let publisher = try scenario.publish(media, to: node.rtmpURL("abr", "demo"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "abr", "demo")

                var listed: [[String: Any]] = []
                let all = await eventually(timeout: .seconds(20), interval: .milliseconds(250)) {
                    listed = (try? await Self.sessions(node, "?kind=publish")) ?? []
                    return listed.count == 4
                }
                try scenario.require(all, "expected the publisher, two rungs and the pull, listed \(listed)")
                let byPath = Dictionary(listed.map { ($0["path"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first })
                scenario.check(byPath["abr/demo"]?["protocol"] as? String == "rtmp", "the publisher: \(byPath["abr/demo"] ?? [:])")
                for rung in ["abr/demo/360p", "abr/demo/240p"] {
                    scenario.check(byPath[rung]?["protocol"] as? String == "transcode" && byPath[rung]?["remoteAddress"] as? String == "transcoder", "the rung \(rung): \(byPath[rung] ?? [:])")
                }
                scenario.check(byPath["live/mirror"]?["protocol"] as? String == "pull", "the pull: \(byPath["live/mirror"] ?? [:])")
                // A rung ends with its stream: kicking it is refused as a conflict.
                let rungID = byPath["abr/demo/360p"]?["id"] as? String ?? ""
                scenario.check(try await Self.kick(node, rungID) == 409, "kicking a rung did not answer 409")
                scenario.check((byPath["live/mirror"]?["remoteAddress"] as? String)?.contains("127.0.0.1:\(origin.httpPort)") == true, "the pull's address: \(byPath["live/mirror"] ?? [:])")

                // Bytes grow for each, over 3 s.
                try await Task.sleep(for: .seconds(3))
                let later = Dictionary(((try? await Self.sessions(node, "?kind=publish")) ?? []).map { ($0["path"] as? String ?? "", $0) }, uniquingKeysWith: { first, _ in first })
                for path in ["abr/demo", "abr/demo/360p", "abr/demo/240p", "live/mirror"] {
                    let before = byPath[path]?["bytesIn"] as? Int ?? 0
                    let after = later[path]?["bytesIn"] as? Int ?? 0
                    scenario.check(after > before && after > 20_000, "\(path): bytesIn \(before) → \(after) in 3 s")
                }
                // The stream's detail lists the publisher and its rungs.
                let (detailStatus, detail) = try await node.admin("/api/v1/streams/abr/demo", token: Self.token)
                let ofStream = Set(((detail["sessions"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String })
                scenario.check(detailStatus == 200 && ofStream == ["abr/demo", "abr/demo/360p", "abr/demo/240p"], "GET /api/v1/streams/abr/demo: \(detailStatus) \(ofStream)")

                // A viewer stays on a rung published this way for 30 s: never dropped, no gap over
                // 500 ms, and the rung stays one session (listed with the same id) throughout.
                let rungViewer = try await scenario.openViewer(node, "abr/demo", "360p")
                try scenario.require(await rungViewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the rung viewer got no media")
                let gap = try await longestWait(for: .seconds(30), every: .milliseconds(50), from: rungViewer.receivedBytes) { rungViewer.receivedBytes }
                scenario.check(gap < .milliseconds(500), "the rung viewer saw nothing for \(gap)")
                scenario.check(!rungViewer.isClosed, "the rung viewer was dropped")
                let rungNow = try await Self.sessions(node, "?protocol=transcode").filter { $0["path"] as? String == "abr/demo/360p" }
                scenario.check(rungNow.map { $0["id"] as? String } == [rungID], "after 30 s the 360p rung's sessions are \(rungNow)")
                let flv = try rungViewer.flv()
                scenario.check(flv.error == nil && flv.timestampRegressions().isEmpty && flv.videoFrames.count >= 700, "the rung viewer's FLV: \(flv.error ?? "") \(flv.videoFrames.count) video frames")

                // The publisher goes: its stream ends after its grace (1 s), and the rungs' sessions with it.
                _ = await publisher.stop()
                let ended = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) {
                    let paths = ((try? await Self.sessions(node, "?kind=publish")) ?? []).compactMap { $0["path"] as? String }
                    return paths == ["live/mirror"]
                }
                let left = ((try? await Self.sessions(node, "?kind=publish")) ?? []).compactMap { $0["path"] as? String }
                scenario.check(ended, "after the publisher left: \(left)")
                scenario.check(node.log.contains("the stream ended"), "the rungs' ends are not logged with their reason")
            }
        }

        @Test("A forward is a viewing session (protocol forward) with its target as address and growing bytes out; kicked, its connection drops and it returns as a new session after its backoff, and the target's viewer then stays 30 s with no gap over 500 ms; it leaves the list when its stream ends")
        func forwardsAreSessions() async throws {
            try await Scenario.run("sessions-forward") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                // The target keeps its stream 5 s without a publisher: the forward's reconnect
                // after its kick (1 s backoff) is within it, so the target's viewer stays.
                let target = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 5), label: "target", arguments: ["--admin-token", Self.token])
                let origin = try await scenario.startNode(
                    NodeConfig(forwards: ["live": ["rtmp://127.0.0.1:\(target.rtmpPort)/relayed"]]),
                    label: "origin", arguments: ["--admin-token", Self.token]
                )
                let publisher = try scenario.publish(media, to: origin.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(target, "relayed", "cam", timeout: .seconds(15))

                var forwards: [[String: Any]] = []
                let listed = await eventually(timeout: .seconds(10), interval: .milliseconds(250)) {
                    forwards = (try? await Self.sessions(origin, "?protocol=forward")) ?? []
                    return forwards.count == 1
                }
                try scenario.require(listed, "the forward is not listed: \(forwards)")
                let forward = forwards[0]
                let firstID = forward["id"] as? String ?? ""
                scenario.check(forward["kind"] as? String == "play" && forward["path"] as? String == "live/cam", "the forward: \(forward)")
                scenario.check(forward["remoteAddress"] as? String == "rtmp://127.0.0.1:\(target.rtmpPort)/relayed", "the forward's address: \(forward)")
                // The target sees it as an RTMP publisher.
                let atTarget = try await Self.sessions(target, "?kind=publish")
                scenario.check(atTarget.contains { $0["path"] as? String == "relayed/cam" && $0["protocol"] as? String == "rtmp" }, "the target's publishers: \(atTarget)")

                // Its bytes out grow.
                let before = forward["bytesOut"] as? Int ?? 0
                try await Task.sleep(for: .seconds(3))
                let after = (try await Self.sessions(origin, "?protocol=forward")).first?["bytesOut"] as? Int ?? 0
                scenario.check(after > before + 20_000, "the forward's bytesOut \(before) → \(after) in 3 s")

                // A viewer at the target watches across the kick: the forward reconnects.
                let viewer = try await scenario.openViewer(target, "relayed", "cam")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the target's viewer got no media")
                scenario.check(try await Self.kick(origin, firstID) == 202, "kicking the forward")
                var again: [[String: Any]] = []
                let returned = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) {
                    again = (try? await Self.sessions(origin, "?protocol=forward")) ?? []
                    return again.count == 1 && again[0]["id"] as? String != firstID
                }
                scenario.check(returned, "the forward did not come back as a new session: \(again)")
                scenario.check(origin.log.contains("kicked: maintenance"), "the forward's end is not logged as a kick")
                // The target's viewer stays on the forwarded stream 30 s after it came back: never
                // dropped, no wait over 500 ms, timestamps never backwards across the reconnect.
                let gap = try await longestWait(for: .seconds(30), every: .milliseconds(50), from: viewer.receivedBytes) { viewer.receivedBytes }
                scenario.check(gap < .milliseconds(500), "the target's viewer saw nothing for \(gap) after the forward came back")
                scenario.check(!viewer.isClosed, "the target's viewer was dropped")
                let flv = try viewer.flv()
                scenario.check(flv.error == nil && flv.timestampRegressions().isEmpty && flv.videoFrames.count >= 900,
                               "the target's viewer's FLV: \(flv.error ?? "") \(flv.timestampRegressions().count) regressions, \(flv.videoFrames.count) video frames")
                let stillOne = try await Self.sessions(origin, "?protocol=forward")
                scenario.check(stillOne.map { $0["id"] as? String } == again.map { $0["id"] as? String }, "the forward's session changed during the 30 s: \(again) → \(stillOne)")

                // The stream ends: so does the forward's session.
                _ = await publisher.stop()
                let gone = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) {
                    ((try? await Self.sessions(origin, "?protocol=forward")) ?? [[:]]).isEmpty
                }
                scenario.check(gone, "the forward is still listed after its stream ended")
            }
        }

        @Test("The admin API says why it refuses (no token configured, none sent, a wrong one) in JSON, and lists forwards and pulls as empty where none are configured")
        func adminRefusalsAndEmptyLists() async throws {
            try await Scenario.run("admin-answers") { scenario in
                let closed = try await scenario.startNode(label: "closed")
                let open = try await scenario.startNode(label: "open", arguments: ["--admin-token", Self.token])
                func error(_ node: NodeProcess, _ headers: [String: String]) async throws -> (Int, String) {
                    let response = try await HTTPClient.get(port: node.adminPort, path: "/api/v1/sessions", headers: headers)
                    let json = (try? JSONSerialization.jsonObject(with: Data(response.bodyText.utf8))) as? [String: Any]
                    return (response.status, json?["error"] as? String ?? "not JSON: \(response.bodyText.prefix(200))")
                }
                let (closedStatus, closedError) = try await error(closed, ["Authorization": "Bearer anything"])
                scenario.check(closedStatus == 401 && closedError.contains("no admin token is configured"), "a node without a token: \(closedStatus) \(closedError)")
                let (missingStatus, missing) = try await error(open, [:])
                scenario.check(missingStatus == 401 && missing.contains("a bearer token is required"), "no token sent: \(missingStatus) \(missing)")
                let (wrongStatus, wrong) = try await error(open, ["Authorization": "Bearer wrong"])
                scenario.check(wrongStatus == 401 && wrong.contains("not this node's admin token"), "a wrong token: \(wrongStatus) \(wrong)")
                for (path, key) in [("/api/v1/forwards", "forwards"), ("/api/v1/pulls", "pulls")] {
                    let (status, json) = try await open.admin(path, token: Self.token)
                    scenario.check(status == 200 && (json[key] as? [Any])?.isEmpty == true, "GET \(path) without any configured: \(status) \(json)")
                }
            }
        }

        @Test("In a cluster the coordinator lists every node's sessions with their node, live, and kicks a relay's viewer through it; each node answers for its own")
        func clusterSessions() async throws {
            try await Scenario.run("sessions-cluster") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let nats = try await NATSServerProcess.start(scenario)
                let bus = ["--nats", nats.url, "--admin-token", Self.token]
                let coordinator = try await scenario.startNode(NodeConfig(), label: "coordinator", arguments: ["--role", "coordinator", "--node-id", "coordinator"] + bus)
                let ingest = try await scenario.startNode(NodeConfig(), label: "ingest", arguments: ["--role", "ingest", "--node-id", "ingest-1"] + bus)
                let relay = try await scenario.startNode(NodeConfig(), label: "relay", arguments: ["--role", "relay", "--node-id", "relay-1"] + bus)
                _ = try scenario.publish(media, to: ingest.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(relay, "live", "cam", timeout: .seconds(15))
                let curl = try scenario.launch("curl", ["-sS", "-o", scenario.file("relay.flv").path, relay.flvURL("live", "cam")], name: "curl-viewer")

                var listed: [[String: Any]] = []
                let both = await eventually(timeout: .seconds(10), interval: .milliseconds(250)) {
                    listed = (try? await Self.sessions(coordinator)) ?? []
                    return listed.contains { $0["node"] as? String == "ingest-1" && $0["kind"] as? String == "publish" }
                        && listed.contains { $0["node"] as? String == "relay-1" && $0["protocol"] as? String == "http-flv" }
                }
                try scenario.require(both, "the coordinator does not list the ingest's publisher and the relay's viewer: \(listed)")
                let viewer = try #require(listed.first { $0["node"] as? String == "relay-1" && $0["protocol"] as? String == "http-flv" })
                scenario.check(try await Self.sessions(coordinator, "?node=relay-1").count == listed.filter { $0["node"] as? String == "relay-1" }.count, "node=relay-1 filters wrongly")
                // Each node answers for its own.
                let onRelay = try await Self.sessions(relay)
                scenario.check(onRelay.map { $0["id"] as? String } == [viewer["id"] as? String], "the relay lists \(onRelay)")
                let (_, json) = try await coordinator.admin("/api/v1/sessions", token: Self.token)
                scenario.check((json["unreachable"] as? [String]) == [], "unreachable nodes: \(json["unreachable"] ?? "nil")")
                // The stream's detail lists its sessions: the ingest's publisher, the relay's viewer.
                let (detailStatus, detail) = try await coordinator.admin("/api/v1/streams/live/cam", token: Self.token)
                let stream = detail["stream"] as? [String: Any]
                let ofStream = (detail["sessions"] as? [[String: Any]]) ?? []
                scenario.check(detailStatus == 200 && stream?["name"] as? String == "cam", "GET /api/v1/streams/live/cam: \(detailStatus) \(detail)")
                scenario.check(
                    ofStream.contains { $0["kind"] as? String == "publish" && $0["node"] as? String == "ingest-1" && $0["path"] as? String == "live/cam" }
                        && ofStream.contains { $0["id"] as? String == viewer["id"] as? String },
                    "the stream's detail lists \(ofStream)"
                )
                let (missing, _) = try await coordinator.admin("/api/v1/streams/live/nobody", token: Self.token)
                scenario.check(missing == 404, "GET /api/v1/streams/live/nobody answered \(missing)")

                scenario.check(try await Self.kick(coordinator, viewer["id"] as? String ?? "") == 202, "kicking the relay's viewer through the coordinator")
                let ended = await curl.waitForExit(timeout: .seconds(5))
                scenario.check(ended == .exited(0), "curl after the kick: \(ended.map { "\($0)" } ?? "still running")")
                scenario.check(try await Self.kick(coordinator, "v-0123456789abcdef") == 404, "kicking an unknown session through the coordinator did not answer 404")
                let gone = await eventually(timeout: .seconds(5), interval: .milliseconds(250)) {
                    ((try? await Self.sessions(coordinator, "?kind=play")) ?? [["x": 1]]).isEmpty
                }
                scenario.check(gone, "the kicked viewer is still listed")
            }
        }
    }
}
