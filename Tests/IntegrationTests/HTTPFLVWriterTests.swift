import Foundation
import Testing

extension IntegrationTests {
    /// HTTP-FLV viewers written from the channel (`HTTPFLVViewerHandler`), not by a response
    /// task: what a viewer sees must be exactly what it saw before.
    @Suite("HTTP-FLV viewers written from the channel")
    struct HTTPFLVWriterTests {
        @Test("An HTTP-FLV viewer gets chunked FLV that starts on a keyframe with every frame in order; a request sent during the stream is not answered and does not disturb it; when the stream ends, the response ends with its last chunk and the connection closes; the viewer gauge follows the viewers")
        func writtenFromTheChannel() async throws {
            try await Scenario.run("flv-writer") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)  // 12 s
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1))
                _ = try scenario.publish(media, to: node.rtmpURL("live", "written"), name: "publisher")
                try await scenario.waitUntilLive(node, "live", "written")
                let viewer = try await scenario.openViewer(node, "live", "written")
                let leaving = try await scenario.openViewer(node, "live", "written")
                scenario.check(viewer.headers["transfer-encoding"] == "chunked", "transfer-encoding: \(viewer.headers["transfer-encoding"] ?? "none")")
                scenario.check(viewer.headers["content-type"] == "video/x-flv", "content-type: \(viewer.headers["content-type"] ?? "none")")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 20_000, timeout: .seconds(10)), "the viewer received nothing")
                let both = try await node.metrics().sum("estuary_httpflv_viewers")
                scenario.check(both == 2, "estuary_httpflv_viewers with two viewers: \(both)")

                // A request on the streaming connection is not answered; the stream goes on.
                try await viewer.connection.send(Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
                let received = viewer.receivedBytes
                scenario.check(await viewer.waitForProgress(beyond: received, bytes: 20_000, timeout: .seconds(5)), "the stream stopped after a second request")

                // A viewer that leaves is counted out.
                await leaving.close()
                let one = await eventually(timeout: .seconds(5), interval: .milliseconds(100)) {
                    (try? await node.metrics().sum("estuary_httpflv_viewers")) == 1
                }
                scenario.check(one, "estuary_httpflv_viewers did not drop to 1 after a viewer left")

                // The publisher's 12 s end, then its 1 s grace: the response ends, the connection closes.
                scenario.check(await viewer.connection.waitForClose(timeout: .seconds(25)), "the viewer's connection is still open after its stream ended")
                let response = try viewer.response()
                scenario.check(response.complete, "the response ended without its last chunk")
                let raw = viewer.connection.bytes()
                scenario.check(raw.suffix(5).elementsEqual(Array("0\r\n\r\n".utf8)), "bytes after the last chunk: \(String(decoding: raw.suffix(40), as: UTF8.self).debugDescription)")
                let flv = FLVStream.parse(response.body)
                scenario.check(flv.error == nil && flv.headerValid, "the FLV body: \(flv.error ?? "bad header")")
                let video = flv.tags.filter { $0.isVideo && !$0.isAVCSequenceHeader }
                scenario.check(video.first?.isKeyframe == true, "the first video frame is not a keyframe")
                scenario.check(flv.tags.prefix(4).contains { $0.isAVCSequenceHeader }, "no AVC sequence header before the media")
                let times = flv.tags.filter(\.isMediaFrame).map(\.timestamp)
                scenario.check(zip(times, times.dropFirst()).allSatisfy { $0 <= $1 } || Self.perTrackMonotonic(flv), "timestamps went backwards")
                // 12 s at 30 fps, joined a little after the start: most of the 360 frames.
                scenario.check(video.count >= 250, "only \(video.count) video frames")
                let none = await eventually(timeout: .seconds(5), interval: .milliseconds(100)) {
                    (try? await node.metrics().sum("estuary_httpflv_viewers")) == 0
                }
                scenario.check(none, "estuary_httpflv_viewers did not return to 0")
            }
        }

        /// Audio and video each in order (FLV interleaves them by DTS, within a few ms).
        static func perTrackMonotonic(_ flv: FLVStream) -> Bool {
            for isVideo in [true, false] {
                let times = flv.tags.filter { $0.isMediaFrame && $0.isVideo == isVideo }.map(\.timestamp)
                if !zip(times, times.dropFirst()).allSatisfy({ $0 <= $1 }) { return false }
            }
            return true
        }
    }
}
