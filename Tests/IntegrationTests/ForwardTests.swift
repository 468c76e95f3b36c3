import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension IntegrationTests {
    /// `forwards`: every stream published to an application is pushed on to RTMP targets,
    /// reconnecting with backoff, without ever holding up the node's own viewers.
    @Suite("Push-forwarding")
    struct ForwardTests {
        @Test("A stream forwarded to a second node plays there; when that node dies the forward backs off and resumes once it is back; local viewers never notice; the admin API and /metrics show the forward")
        func forwardToASecondNode() async throws {
            try await Scenario.run("forward") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let ports = try await FreePorts.allocate(2)
                var target = try await scenario.startNode(label: "target", ports: ports)
                let origin = try await scenario.startNode(
                    NodeConfig(forwards: ["live": ["rtmp://127.0.0.1:\(ports[0])/relayed"]]),
                    label: "origin",
                    arguments: ["--admin-token", "secret"]
                )
                let publisher = try scenario.publish(media, to: origin.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(origin, "live", "cam")
                let localViewer = try await scenario.openViewer(origin, "live", "cam")

                // The forward arrives at the target as relayed/cam, a stream like any other.
                try await scenario.waitUntilLive(target, "relayed", "cam", timeout: .seconds(15))
                if let report = try await scenario.probeLive(target.flvURL("relayed", "cam"), name: "probe-target", seconds: 5) {
                    scenario.checkLivePlayback(report, "the forwarded stream", minVideoPackets: 120, width: media.width)
                }
                let status = try await HTTPClient.get(port: origin.adminPort, path: "/api/v1/forwards", headers: ["Authorization": "Bearer secret"])
                scenario.check(status.status == 200 && status.bodyText.contains("\"forwarding\"") && status.bodyText.contains("relayed"),
                               "GET /api/v1/forwards: \(status.status) \(status.bodyText)")
                let unauthorized = try await HTTPClient.get(port: origin.adminPort, path: "/api/v1/forwards")
                scenario.check(unauthorized.status == 401, "GET /api/v1/forwards without a token answered \(unauthorized.status)")

                // The target dies: the origin's own viewer goes on, the forward backs off.
                await target.kill()
                let framesAtKill = try localViewer.flv().videoFrames.count
                try await Task.sleep(for: .seconds(3))
                let framesLater = try localViewer.flv().videoFrames.count
                scenario.check(framesLater - framesAtKill >= 60, "the origin's viewer got \(framesLater - framesAtKill) video frames in the 3 s after the forward's target died")
                scenario.check(!localViewer.isClosed, "the origin's viewer was disconnected when the forward failed")
                let failures = try await origin.metrics().sum("estuary_forward_failures_total")
                scenario.check(failures >= 1, "estuary_forward_failures_total is \(failures) after the target died")

                // The target is back (same ports): the forward resumes by itself.
                target = try await scenario.startNode(label: "target-again", ports: ports)
                try await scenario.waitUntilLive(target, "relayed", "cam", timeout: .seconds(40))
                let connections = try await origin.metrics().sum("estuary_forward_connections_total")
                scenario.check(connections >= 2, "estuary_forward_connections_total is \(connections) after the target came back")
                scenario.note("forward resumed after the target restarted: \(Int(connections)) connections, \(Int(failures))+ failures")
                publisher.send(signal: SIGTERM)
            }
        }
    }
}
