import Foundation
import TestSupport
import RTMP
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension IntegrationTests {
    @Suite("Publisher reconnect and takeover")
    struct ReconnectTests {
        @Test("A publisher killed and reconnected within the grace period: viewers stay, timestamps never go backwards")
        func killAndReconnect() async throws {
            try await Scenario.run("reconnect") { scenario in
                let media = try await MediaLibrary.shared.file(.audioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 5))
                let first = try scenario.publish(media, to: node.rtmpURL("live", "phone"), name: "publisher-1")
                try await scenario.waitUntilLive(node, "live", "phone")

                let viewer = try await scenario.openViewer(node, "live", "phone")
                let rtmpViewer = try scenario.launch(
                    "ffprobe",
                    ["-v", "error", "-show_entries", "stream=index,codec_type,codec_name:packet=stream_index,dts,pts,flags", "-of", "json", node.rtmpURL("live", "phone")],
                    name: "probe-rtmp"
                )

                try await Task.sleep(for: .seconds(3))
                let beforeKill = try viewer.flv()
                scenario.check(beforeKill.videoFrames.count >= 30, "HTTP-FLV viewer got \(beforeKill.videoFrames.count) video frames in the first 3 s")
                first.send(signal: SIGKILL)
                let killed = await first.waitForExit(timeout: .seconds(3))
                try scenario.require(killed == .signalled(SIGKILL), "publisher-1 did not die of SIGKILL: \(killed.map(\.description) ?? "still running")")
                scenario.note("publisher-1 killed after \(beforeKill.videoFrames.count) video frames reached the viewer")

                try await Task.sleep(for: .milliseconds(500))
                scenario.check(!viewer.isClosed, "HTTP-FLV viewer was disconnected when the publisher died (grace period is 5 s)")
                let atReconnect = try viewer.flv()
                let second = try scenario.publish(media, to: node.rtmpURL("live", "phone"), name: "publisher-2")

                let secondEnded = await second.waitForExit(timeout: .seconds(15))
                scenario.check(secondEnded == .exited(0), "publisher-2 (the reconnect) ended with \(secondEnded.map(\.description) ?? "no exit"): \(tail(second.stderrText, lines: 10))")
                let probe = await rtmpViewer.finish(timeout: .seconds(10))
                _ = await viewer.connection.waitForClose(timeout: .seconds(3))

                // The HTTP-FLV viewer: connected throughout, the second publisher's frames arrived, time moved forward only.
                let flv = try viewer.flv()
                scenario.check(flv.error == nil, "HTTP-FLV viewer stream is not valid FLV: \(flv.error ?? "")")
                let afterReconnect = Array(flv.tags.dropFirst(atReconnect.tags.count))
                let newVideo = afterReconnect.filter { $0.isVideo && $0.isMediaFrame }
                let newAudio = afterReconnect.filter { $0.isAudio && $0.isMediaFrame }
                scenario.check(
                    Double(newVideo.count) >= 0.9 * Double(media.videoFrames),
                    "HTTP-FLV viewer got \(newVideo.count) video frames after the reconnect; publisher-2 sent \(media.videoFrames)"
                )
                scenario.check(
                    Double(newAudio.count) >= 0.9 * Double(media.audioFrames),
                    "HTTP-FLV viewer got \(newAudio.count) audio frames after the reconnect; publisher-2 sent \(media.audioFrames)"
                )
                scenario.check(
                    newVideo.first(where: { !$0.isAVCSequenceHeader })?.isKeyframe == true,
                    "first video frame after the reconnect is not a keyframe"
                )
                let regressions = flv.timestampRegressions()
                scenario.check(regressions.isEmpty, "HTTP-FLV viewer timestamps go backwards: \(regressions.prefix(5).map { "type \($0.type): \($0.previous) -> \($0.next)" })")
                if let lastBefore = atReconnect.videoFrames.last?.timestamp, let firstAfter = newVideo.first?.timestamp {
                    scenario.check(firstAfter >= lastBefore, "video timestamp restarts at the reconnect: \(lastBefore) -> \(firstAfter)")
                    scenario.note("video timestamps across the reconnect: \(lastBefore) -> \(firstAfter) ms; last \(flv.videoFrames.last?.timestamp ?? 0) ms")
                }
                let response = try viewer.response()
                scenario.check(response.complete, "HTTP-FLV response did not end with the terminating chunk after the grace period (closed: \(viewer.isClosed))")

                // The RTMP viewer: same properties from ffprobe's point of view.
                scenario.check(!probe.timedOut, "RTMP viewer never saw the end of the stream (killed 10 s after publisher-2 ended; grace is 5 s): \(probe)")
                scenario.check(probe.timedOut || probe.succeeded, "RTMP viewer: \(probe)")
                if probe.succeeded {
                    let report = try ProbeReport.decode(probe.stdout)
                    let video = report.packets(of: report.video).count
                    scenario.check(
                        Double(video) >= Double(beforeKill.videoFrames.count) + 0.9 * Double(media.videoFrames),
                        "RTMP viewer got \(video) video packets; at least \(beforeKill.videoFrames.count) before the kill + 90% of \(media.videoFrames) after were expected"
                    )
                    scenario.check(report.dtsRegressions(of: report.video).isEmpty, "RTMP viewer video DTS goes backwards: \(report.dtsRegressions(of: report.video).prefix(5))")
                    scenario.check(report.dtsRegressions(of: report.audio).isEmpty, "RTMP viewer audio DTS goes backwards: \(report.dtsRegressions(of: report.audio).prefix(5))")
                }
            }
        }

        @Test("A second publisher is refused while the first is live; it takes over once the first is idle")
        func secondPublisherAndIdleTakeover() async throws {
            try await Scenario.run("takeover") { scenario in
                let media = try await MediaLibrary.shared.file(.audioVideo)
                let node = try await scenario.startNode(NodeConfig(publisherIdleTakeoverSeconds: 2, publisherGraceSeconds: 2))
                let first = try scenario.publish(media, to: node.rtmpURL("live", "desk"), name: "publisher-1", loop: true)
                try await scenario.waitUntilLive(node, "live", "desk")
                let viewer = try await scenario.openViewer(node, "live", "desk")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(5)), "viewer received only \(viewer.receivedBytes) bytes")

                // The exact status code a second publisher gets.
                let client = try await RTMPRawClient.connect(port: node.rtmpPort)
                scenario.track(client.connection)
                try await client.plainHandshake()
                try await client.connect(app: "live")
                let streamID = try await client.createStream()
                let code = try await client.publish(name: "desk", streamID: streamID)
                scenario.check(code == "NetStream.Publish.BadName", "a second publisher on a live key got \(code), expected NetStream.Publish.BadName")
                await client.close()

                // ffmpeg as the second publisher exits non-zero, quickly.
                let refusedStart = ContinuousClock.now
                let refused = try scenario.publish(media, to: node.rtmpURL("live", "desk"), name: "publisher-refused")
                let refusedEnd = await refused.waitForExit(timeout: .seconds(8))
                scenario.check(
                    refusedEnd != nil && refusedEnd != .exited(0),
                    "second ffmpeg publisher on a live key: \(refusedEnd.map(\.description) ?? "still running after 8 s"), expected a non-zero exit"
                )
                scenario.check(ContinuousClock.now - refusedStart < .seconds(5), "refusing the second publisher took \(ContinuousClock.now - refusedStart)")

                let baseline = viewer.receivedBytes
                scenario.check(
                    await viewer.waitForProgress(beyond: baseline, bytes: 20_000, timeout: .seconds(4)),
                    "the first stream stopped reaching the viewer after the refused publisher (\(viewer.receivedBytes - baseline) new bytes)"
                )

                // The first publisher freezes with its TCP connection open; after the idle time a new one takes over.
                first.send(signal: SIGSTOP)
                scenario.note("publisher-1 stopped (SIGSTOP)")
                try await Task.sleep(for: .seconds(3))
                let atTakeover = try viewer.flv()
                let takeover = try scenario.publish(media, to: node.rtmpURL("live", "desk"), name: "publisher-takeover", loop: true)
                try await Task.sleep(for: .seconds(4))
                scenario.check(takeover.isRunning, "the takeover publisher was refused after the first was idle for 3 s: \(takeover.termination.map(\.description) ?? ""): \(tail(takeover.stderrText, lines: 10))")
                scenario.check(!viewer.isClosed, "viewer disconnected during the takeover")
                let flv = try viewer.flv()
                let newVideo = flv.tags.dropFirst(atTakeover.tags.count).filter { $0.isVideo && $0.isMediaFrame }
                scenario.check(newVideo.count >= 60, "viewer got \(newVideo.count) video frames in the 4 s after the takeover")
                let regressions = flv.timestampRegressions()
                scenario.check(regressions.isEmpty, "viewer timestamps go backwards across the takeover: \(regressions.prefix(5).map { "type \($0.type): \($0.previous) -> \($0.next)" })")

                await first.killNow()
                await takeover.killNow()
            }
        }
    }
}
