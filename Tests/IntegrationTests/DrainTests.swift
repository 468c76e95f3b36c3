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
    /// Graceful drain: `POST /api/v1/node/drain` and SIGTERM with a grace period stop new
    /// sessions, ask Enhanced RTMP v2 publishers to move, and wait for the node to empty.
    @Suite("Graceful drain")
    struct DrainTests {
        static let token = "drain-secret"

        @Test("POST /api/v1/node/drain: an Enhanced RTMP v2 publisher is asked to reconnect and moves to the node it is sent to; the draining node refuses new sessions, is not ready, and exits once its last viewer leaves")
        func drainMovesEnhancedPublisher() async throws {
            try await Scenario.run("drain-move") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let target = try await scenario.startNode(label: "target")
                // A long publisher grace keeps the stream (and its viewer) on the draining node
                // after the publisher leaves, so the node's refusals can be checked while it drains.
                let node = try await scenario.startNode(
                    NodeConfig(publisherGraceSeconds: 20, drainGraceSeconds: 60), label: "draining", arguments: ["--admin-token", Self.token]
                )
                let publisher = try MovingPublisher(file: media.url, app: "live", name: "moving")
                scenario.atTearDown { publisher.stop() }
                let publishing = Task { await publisher.run(port: node.rtmpPort, loops: 4, scenario: scenario) }
                try await scenario.waitUntilLive(node, "live", "moving")
                scenario.check(publisher.report.serverCapsEx.first == 1, "connect's _result answered capsEx \(String(describing: publisher.report.serverCapsEx.first)), expected 1 (reconnect)")
                let viewer = try await scenario.openViewer(node, "live", "moving")

                let unauthorized = try await HTTPClient.request("POST", port: node.adminPort, path: "/api/v1/node/drain", body: "{}")
                scenario.check(unauthorized.status == 401, "POST /api/v1/node/drain without the token answered \(unauthorized.status)")
                let invalid = try await HTTPClient.request(
                    "POST", port: node.adminPort, path: "/api/v1/node/drain", headers: ["Authorization": "Bearer \(Self.token)"],
                    body: #"{"reconnectTo": "http://elsewhere/"}"#
                )
                scenario.check(invalid.status == 400, "a drain to an http:// URL answered \(invalid.status): \(invalid.bodyText)")
                let ready = try await HTTPClient.get(port: node.httpPort, path: "/readyz")
                scenario.check(ready.status == 200, "/readyz before the drain answered \(ready.status)")

                let destination = "\(target.rtmpBase)"
                node.expectExit()
                let started = try await HTTPClient.request(
                    "POST", port: node.adminPort, path: "/api/v1/node/drain", headers: ["Authorization": "Bearer \(Self.token)"],
                    body: #"{"reconnectTo": "\#(destination)"}"#
                )
                scenario.check(started.status == 202 && started.bodyText.contains("\"draining\":true"), "POST /api/v1/node/drain answered \(started.status): \(started.bodyText)")
                let again = try await HTTPClient.request("POST", port: node.adminPort, path: "/api/v1/node/drain", headers: ["Authorization": "Bearer \(Self.token)"])
                scenario.check(again.status == 409, "a second drain answered \(again.status), expected 409")

                // Draining: not ready, and new sessions are refused with a clear answer.
                let notReady = try await HTTPClient.get(port: node.httpPort, path: "/readyz")
                scenario.check(notReady.status == 503, "/readyz while draining answered \(notReady.status)")
                let (refusedPublisher, code) = try await RTMPRawClient.publishing(scenario, port: node.rtmpPort, app: "live", name: "latecomer")
                scenario.check(code == "NetStream.Publish.Denied", "a new publisher on the draining node got \(code)")
                await refusedPublisher.close()
                let refusedPlay = try await HTTPClient.openStream(port: node.httpPort, path: "/live/moving.flv")
                scenario.check(refusedPlay.1.status == 503, "a new HTTP-FLV viewer of the draining node got \(refusedPlay.1.status)")
                await refusedPlay.0.close()

                // The publisher moves at its next keyframe, and plays on the target.
                let moved = await eventually(timeout: .seconds(10), interval: .milliseconds(100)) { !publisher.report.moves.isEmpty }
                try scenario.require(moved, "the publisher did not move within 10 s: \(publisher.report)")
                scenario.check(publisher.report.moves == ["\(destination)/live"], "the publisher moved to \(publisher.report.moves), expected \(destination)/live")
                try await scenario.waitUntilLive(target, "live", "moving")
                let requests = try await node.metrics().sum("estuary_rtmp_reconnect_requests_total")
                scenario.check(requests == 1, "estuary_rtmp_reconnect_requests_total = \(requests), expected 1")
                let refusals = try await node.metrics().sum("estuary_publishes_refused_total", labels: ["reason": "draining"])
                scenario.check(refusals == 1, "estuary_publishes_refused_total{reason=draining} = \(refusals), expected 1")

                if let report = try await scenario.probeLive(target.flvURL("live", "moving"), name: "probe-target", seconds: 4) {
                    scenario.checkLivePlayback(report, "the moved stream", minVideoPackets: 90, width: media.width)
                }

                // Its publisher gone, the draining node waits for its last viewer, then exits.
                try await Task.sleep(for: .seconds(1))
                scenario.check(node.process.isRunning, "the draining node exited while a viewer was still attached")
                let status = try await node.admin("/api/v1/node/drain", token: Self.token)
                scenario.check(status.0 == 200 && status.1["publishers"] as? Int == 0 && status.1["viewers"] as? Int == 1,
                               "GET /api/v1/node/drain after the move: \(status.0) \(status.1)")
                await viewer.close()
                let end = await node.process.waitForExit(timeout: .seconds(5))
                scenario.check(end == .exited(0), "the drained node: \(end.map(\.description) ?? "still running 5 s after its last viewer left"), expected exit 0")
                scenario.check(node.log.contains("drain over"), "the drained node did not log the end of its drain")
                scenario.check(publisher.report.failure == nil, "the publisher failed: \(publisher.report.failure ?? "")")
                publisher.stop()
                _ = await publishing.value
            }
        }

        @Test("SIGTERM with a grace period: a publisher that cannot be asked to move (ffmpeg) and its viewer stay served until the grace ends, then the node exits 0 and the viewer's stream ends cleanly; without sessions a drain ends at once")
        func sigtermWaitsForTheGrace() async throws {
            try await Scenario.run("drain-sigterm") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1, drainGraceSeconds: 3), label: "draining")
                _ = try scenario.publish(media, to: node.rtmpURL("live", "legacy"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "legacy")
                let viewer = try await scenario.openViewer(node, "live", "legacy")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the viewer received nothing before SIGTERM")

                let start = ContinuousClock.now
                node.terminate()
                try await Task.sleep(for: .milliseconds(500))
                let notReady = try await HTTPClient.get(port: node.httpPort, path: "/readyz")
                scenario.check(notReady.status == 503, "/readyz while draining answered \(notReady.status)")
                let received = viewer.receivedBytes
                scenario.check(await viewer.waitForProgress(beyond: received, bytes: 20_000, timeout: .seconds(2)), "the viewer stopped receiving during the drain")
                let end = await node.process.waitForExit(timeout: .seconds(8))
                let elapsed = ContinuousClock.now - start
                scenario.check(end == .exited(0), "after SIGTERM: \(end.map(\.description) ?? "still running after 8 s"), expected exit 0")
                scenario.check(elapsed >= .milliseconds(2800) && elapsed < .seconds(6), "the node exited \(elapsed) after SIGTERM; the grace is 3 s")
                scenario.check(await viewer.connection.waitForClose(timeout: .seconds(2)), "the viewer is still connected after the node exited")
                let response = try viewer.response()
                scenario.check(response.complete, "the viewer's chunked response ended without its last chunk")

                // Nothing to wait for: SIGTERM stops the node at once.
                let idle = try await scenario.startNode(NodeConfig(drainGraceSeconds: 30), label: "idle")
                let idleStart = ContinuousClock.now
                idle.terminate()
                let idleEnd = await idle.process.waitForExit(timeout: .seconds(5))
                scenario.check(idleEnd == .exited(0) && ContinuousClock.now - idleStart < .seconds(2),
                               "an idle node after SIGTERM: \(idleEnd.map(\.description) ?? "still running after 5 s") in \(ContinuousClock.now - idleStart)")

                // A second SIGTERM stops the wait.
                let busy = try await scenario.startNode(NodeConfig(drainGraceSeconds: 60), label: "busy")
                _ = try scenario.publish(media, to: busy.rtmpURL("live", "held"), name: "held-publisher", loop: true)
                try await scenario.waitUntilLive(busy, "live", "held")
                busy.terminate()
                try await Task.sleep(for: .seconds(1))
                scenario.check(busy.process.isRunning, "a node draining a publisher exited within 1 s of SIGTERM")
                let hurryStart = ContinuousClock.now
                busy.terminate()
                let busyEnd = await busy.process.waitForExit(timeout: .seconds(5))
                scenario.check(busyEnd == .exited(0) && ContinuousClock.now - hurryStart < .seconds(3),
                               "after a second SIGTERM: \(busyEnd.map(\.description) ?? "still running after 5 s") in \(ContinuousClock.now - hurryStart)")
            }
        }

        @Test("A forward to a node that drains follows its reconnect request to the node it names, without backoff, and plays there")
        func forwardFollowsADrain() async throws {
            try await Scenario.run("drain-forward") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let ports = try await FreePorts.allocate(2)
                let final = try await scenario.startNode(label: "final")
                let draining = try await scenario.startNode(NodeConfig(drainGraceSeconds: 30), label: "draining", arguments: ["--admin-token", Self.token], ports: ports)
                let origin = try await scenario.startNode(NodeConfig(forwards: ["live": ["rtmp://127.0.0.1:\(ports[0])/relayed"]]), label: "origin")
                _ = try scenario.publish(media, to: origin.rtmpURL("live", "cam"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(draining, "relayed", "cam", timeout: .seconds(15))

                draining.expectExit()
                let started = try await HTTPClient.request(
                    "POST", port: draining.adminPort, path: "/api/v1/node/drain", headers: ["Authorization": "Bearer \(Self.token)"],
                    body: #"{"reconnectTo": "\#(final.rtmpBase)"}"#
                )
                scenario.check(started.status == 202, "POST /api/v1/node/drain answered \(started.status): \(started.bodyText)")
                try await scenario.waitUntilLive(final, "relayed", "cam", timeout: .seconds(5))
                let end = await draining.process.waitForExit(timeout: .seconds(10))
                scenario.check(end == .exited(0), "the drained node: \(end.map(\.description) ?? "still running 10 s after the drain began")")
                let moves = try await origin.metrics().sum("estuary_forward_moves_total")
                scenario.check(moves == 1, "estuary_forward_moves_total = \(moves), expected 1")
                let failures = try await origin.metrics().sum("estuary_forward_failures_total")
                scenario.check(failures == 0, "estuary_forward_failures_total = \(failures): the move went through a failure and backoff")

                if let report = try await scenario.probeLive(final.flvURL("relayed", "cam"), name: "probe-final") {
                    scenario.checkLivePlayback(report, "the moved forward", minVideoPackets: 60)
                }
            }
        }
    }
}
