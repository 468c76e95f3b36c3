import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    @Suite("Graceful shutdown")
    struct ShutdownTests {
        @Test("SIGTERM with a publisher and viewers attached: the node exits 0 quickly and viewers end cleanly")
        func sigtermEndsViewersCleanly() async throws {
            try await Scenario.run("shutdown") { scenario in
                let media = try await MediaLibrary.shared.file(.audioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 10))
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "bye"), name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "bye")

                let recording = scenario.file("rtmp-viewer.flv")
                let rtmpViewer = try scenario.launch(
                    "ffmpeg",
                    ["-nostdin", "-hide_banner", "-loglevel", "warning", "-i", node.rtmpURL("live", "bye"), "-c", "copy", "-f", "flv", "-y", recording.path],
                    name: "rtmp-viewer"
                )
                let httpViewer = try await scenario.openViewer(node, "live", "bye")
                let receiving = await eventually(timeout: .seconds(10), interval: .milliseconds(100)) {
                    let size = fileSize(recording)
                    return size > 50_000 && httpViewer.receivedBytes > 50_000
                }
                try scenario.require(receiving, "viewers were not receiving before the shutdown (HTTP-FLV \(httpViewer.receivedBytes) bytes)")

                let start = ContinuousClock.now
                node.terminate()
                let nodeEnd = await node.process.waitForExit(timeout: .seconds(8))
                let nodeElapsed = ContinuousClock.now - start
                scenario.check(nodeEnd == .exited(0), "node after SIGTERM: \(nodeEnd.map(\.description) ?? "still running after 8 s"), expected exit 0")
                scenario.check(nodeElapsed < .seconds(5), "node took \(nodeElapsed) to shut down")

                let viewerEnd = await rtmpViewer.waitForExit(timeout: .seconds(5))
                scenario.check(viewerEnd == .exited(0), "RTMP viewer (ffmpeg) after the shutdown: \(viewerEnd.map(\.description) ?? "still running 5 s after the node exited"): \(tail(rtmpViewer.stderrText, lines: 10))")
                let publisherEnd = await publisher.waitForExit(timeout: .seconds(5))
                scenario.check(publisherEnd != nil, "publisher ffmpeg still running 5 s after the node exited")

                scenario.check(await httpViewer.connection.waitForClose(timeout: .seconds(2)), "HTTP-FLV viewer still connected after the node exited")
                let response = try httpViewer.response()
                scenario.check(response.complete, "HTTP-FLV viewer's chunked response ended without the terminating chunk (an abort, not a clean end)")
                let flv = FLVStream.parse(response.body)
                scenario.check(flv.error == nil && flv.trailingBytes == 0, "HTTP-FLV viewer's stream ends mid-tag (\(flv.trailingBytes) trailing bytes) or is corrupt: \(flv.error ?? "")")

                let (decode, report) = try await scenario.decodeCheck(recording, name: "decode-recording")
                scenario.check(decode.succeeded && decode.stderr.isEmpty, "the RTMP viewer's recording does not decode cleanly: \(decode)")
                scenario.check((report?.video?.readFrames ?? 0) > 0 && (report?.audio?.readFrames ?? 0) > 0, "the RTMP viewer's recording has no frames")
            }
        }
    }
}
