import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// `pulls`: streams the node pulls from another server and publishes as its own.
    @Suite("Static pulls")
    struct PullTests {
        @Test("Streams pulled over HTTP-FLV and RTMP appear on the node as if published (RTMP, HTTP-FLV and HLS); when the origin's publisher comes back the pull resumes and a viewer of the pulling node stays attached with monotonic timestamps; the admin API shows the pulls")
        func pullsAppearAsPublished() async throws {
            try await Scenario.run("pull") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let origin = try await scenario.startNode(label: "origin")
                var publisher = try scenario.publish(media, to: origin.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(origin, "live", "cam")
                let node = try await scenario.startNode(
                    NodeConfig(publisherGraceSeconds: 15, pulls: ["live": ["mirror": origin.flvURL("live", "cam"), "rtmp-mirror": origin.rtmpURL("live", "cam")]]),
                    label: "puller", arguments: ["--admin-token", "secret"]
                )
                try await scenario.waitUntilLive(node, "live", "mirror")
                try await scenario.waitUntilLive(node, "live", "rtmp-mirror")

                for name in ["mirror", "rtmp-mirror"] {
                    if let report = try await scenario.probeLive(node.rtmpURL("live", name), name: "probe-\(name)") {
                        scenario.checkLivePlayback(report, "the pulled stream \(name)", minVideoPackets: 60, width: media.width)
                    }
                }
                // Published, so segmented: HLS plays the pulled stream too.
                let hls = await eventually(timeout: .seconds(15), interval: .milliseconds(250)) {
                    (try? await HTTPClient.get(port: node.httpPort, path: "/live/mirror/index.m3u8"))?.status == 200
                }
                scenario.check(hls, "no HLS master playlist for the pulled stream within 15 s")
                let status = try await HTTPClient.get(port: node.adminPort, path: "/api/v1/pulls", headers: ["Authorization": "Bearer secret"])
                scenario.check(status.status == 200 && status.bodyText.components(separatedBy: "\"pulling\"").count == 3,
                               "GET /api/v1/pulls: \(status.status) \(status.bodyText)")
                let sessions = try await node.metrics().sum("estuary_sessions_active", labels: ["kind": "publish", "protocol": "pull"])
                scenario.check(sessions == 2, "estuary_sessions_active{kind=publish,protocol=pull} = \(sessions)")

                // The origin's publisher goes away and comes back: the pull resumes, and a
                // viewer of the pulling node stays, within the stream's grace period.
                let viewer = try await scenario.openViewer(node, "live", "mirror")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 50_000, timeout: .seconds(10)), "the pulled stream's viewer received nothing")
                await publisher.stop(grace: .seconds(2))
                try await Task.sleep(for: .seconds(3))
                publisher = try scenario.publish(media, to: origin.rtmpURL("live", "cam"), name: "publisher-again", loop: true)
                let resumed = viewer.receivedBytes
                scenario.check(await viewer.waitForProgress(beyond: resumed, bytes: 100_000, timeout: .seconds(15)), "the pull did not resume within 15 s of the origin's publisher coming back")
                scenario.check(!viewer.connection.isClosed, "the viewer of the pulling node was disconnected while the origin's publisher was away")
                let flv = try viewer.flv()
                let regressions = flv.timestampRegressions()
                scenario.check(regressions.isEmpty, "the viewer's timestamps go backwards: \(regressions.prefix(3).map { "\($0.previous) -> \($0.next)" })")
                scenario.check(flv.error == nil, "the viewer's FLV is corrupt: \(flv.error ?? "")")
                let connects = try await node.metrics().sum("estuary_pull_connections_total")
                scenario.check(connects >= 3, "estuary_pull_connections_total = \(connects): the pull did not reconnect")
            }
        }
    }
}
