import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// A stream named like a rung (`abr/demo_240p`) and the 240p rung of `abr/demo` are two
    /// things with two addresses: the rung is `abr/demo/240p` (RTMP, HTTP-FLV, HLS), the
    /// stream is `abr/demo_240p`. The old `abr/demo_240p` address of the rung keeps working
    /// while no stream of that name is live. Such a name is publishable with a stream key
    /// (an open ingest refuses it: AdmissionTests), so the node here requires keys.
    @Suite("Rendition paths")
    struct RenditionPathTests {
        @Test("A publisher of abr/demo_240p and the 240p rung of abr/demo stay apart over RTMP, HTTP-FLV and HLS; the old rung URL works while the name is free")
        func aStreamNamedLikeARungDoesNotReplaceTheRung() async throws {
            try await Scenario.run("rendition-collision") { scenario in
                // 640x360 source: the default ladder gives 360p (640x360) and 240p (426x240).
                let source = try await MediaLibrary.shared.file(.gopAudioVideo)
                // The look-alike is 320x180, so every answer below tells which one a URL reached.
                let lookalike = try await MediaLibrary.shared.file(.gopSmallAudioVideo)
                let token = "rendition-admin-token"
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1, requireStreamKeys: true), arguments: ["--admin-token", token])
                func key(for name: String) async throws -> String {
                    let created = try await HTTPClient.request(
                        "POST", port: node.adminPort, path: "/api/v1/keys", headers: ["Authorization": "Bearer \(token)"],
                        body: "{\"app\":\"abr\",\"name\":\"\(name)\"}"
                    )
                    let json = (try? JSONSerialization.jsonObject(with: Data(created.bodyText.utf8)) as? [String: Any]) ?? [:]
                    guard created.status == 201, let key = json["key"] as? String else {
                        throw IntegrationFailure("creating a key for abr/\(name) answered \(created.status): \(created.bodyText)")
                    }
                    return key
                }
                let demoKey = try await key(for: "demo")
                let lookalikeKey = try await key(for: "demo_240p")
                _ = try scenario.publish(source, to: node.rtmpURL("abr", "demo") + "?key=\(demoKey)", name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "abr", "demo")
                // `waitUntilLive` asks for /abr/demo/240p.flv: the rung's own address.
                try await scenario.waitUntilLive(node, "abr", "demo/240p", timeout: .seconds(15))

                func size(_ url: String, _ name: String) async throws -> String {
                    let (_, report) = try await scenario.probeStreams(url, name: name, timeout: .seconds(15))
                    guard let video = report?.video, let width = video.width, let height = video.height else { return "none" }
                    return "\(width)x\(height)"
                }

                // Before the look-alike: the old address reaches the rung.
                scenario.check(try await size(node.flvURL("abr", "demo_240p"), "probe-legacy-flv") == "426x240", "the old rung URL does not play the rung before the name is taken")

                let publisher = try scenario.publish(lookalike, to: node.rtmpURL("abr", "demo_240p") + "?key=\(lookalikeKey)", name: "lookalike", loop: true)
                var seen = ""
                let taken = await eventually(timeout: .seconds(15), interval: .milliseconds(500)) {
                    seen = (try? await size(node.flvURL("abr", "demo_240p"), "probe-lookalike-wait")) ?? "error"
                    return seen == "320x180"
                }
                try scenario.require(taken, "the publisher of abr/demo_240p was not accepted as a stream of its own (the URL shows \(seen))")
                scenario.check(publisher.isRunning, "the publisher of abr/demo_240p was refused or disconnected")

                // Each address reaches its own media, over each protocol.
                let answers: [(String, String, String)] = [
                    ("rung over RTMP (application abr/demo, stream 240p)", node.rtmpURL("abr/demo", "240p"), "426x240"),
                    ("rung over HTTP-FLV", node.flvURL("abr", "demo/240p"), "426x240"),
                    ("look-alike over RTMP", node.rtmpURL("abr", "demo_240p"), "320x180"),
                    ("look-alike over HTTP-FLV", node.flvURL("abr", "demo_240p"), "320x180"),
                    ("source over HTTP-FLV", node.flvURL("abr", "demo"), "640x360"),
                ]
                for (index, (label, url, expected)) in answers.enumerated() {
                    let actual = try await size(url, "probe-\(index)")
                    scenario.check(actual == expected, "\(label): \(url) shows \(actual), expected \(expected)")
                }

                // HLS: the rung is listed in abr/demo's master at its size; the look-alike's
                // master lists its own source, and no 426x240 rung.
                var master = ""
                let listed = await eventually(timeout: .seconds(15), interval: .milliseconds(300)) {
                    master = (try? await scenario.hlsGet(node, "/abr/demo/index.m3u8"))?.bodyText ?? ""
                    return master.contains("RESOLUTION=426x240,FRAME-RATE=30.000\n240p/index.m3u8")
                }
                scenario.check(listed, "abr/demo's master playlist does not list its 240p rung at 426x240:\n\(master)")
                var other = ""
                let ownMaster = await eventually(timeout: .seconds(15), interval: .milliseconds(300)) {
                    other = (try? await scenario.hlsGet(node, "/abr/demo_240p/index.m3u8"))?.bodyText ?? ""
                    return other.contains("RESOLUTION=320x180")
                }
                scenario.check(ownMaster, "abr/demo_240p's master playlist does not list its own 320x180 source:\n\(other)")
                scenario.check(!other.contains("426x240"), "abr/demo_240p's master playlist lists abr/demo's rung:\n\(other)")
                let rungPlaylist = try await scenario.hlsGet(node, "/abr/demo/240p/index.m3u8")
                scenario.check(rungPlaylist.status == 200 && rungPlaylist.bodyText.contains("#EXTINF"), "the rung's HLS media playlist: \(rungPlaylist.status)\n\(rungPlaylist.bodyText)")

                // Once the look-alike has gone (after its 1 s grace), the old address is the rung's again.
                _ = await publisher.stop()
                let back = await eventually(timeout: .seconds(15), interval: .milliseconds(500)) {
                    seen = (try? await size(node.flvURL("abr", "demo_240p"), "probe-legacy-again")) ?? "error"
                    return seen == "426x240"
                }
                scenario.check(back, "after the look-alike left, the old rung URL shows \(seen), not the rung")
            }
        }
    }
}
