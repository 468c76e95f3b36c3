import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    @Suite("Fan-out")
    struct FanoutTests {
        static let viewerCount = 100

        @Test("100 concurrent HTTP-FLV viewers each receive a complete, decodable stream")
        func hundredHTTPFLVViewers() async throws {
            try await Scenario.run("fanout") { scenario in
                let media = try await MediaLibrary.shared.file(.small)
                let node = try await scenario.startNode(NodeConfig(publisherGraceSeconds: 1))
                _ = try scenario.publish(media, to: node.rtmpURL("live", "crowd"), name: "publisher")
                try await scenario.waitUntilLive(node, "live", "crowd")

                let url = node.flvURL("live", "crowd")
                var viewers: [(ChildProcess, URL)] = []
                for index in 0..<Self.viewerCount {
                    let file = scenario.file("viewer-\(index).flv")
                    let curl = try scenario.launch("curl", ["-sS", "--max-time", "15", "-o", file.path, url], name: "curl-\(index)")
                    viewers.append((curl, file))
                }
                scenario.note("\(Self.viewerCount) curl viewers started")

                var failedTransfers: [String] = []
                for (curl, _) in viewers {
                    let end = await curl.waitForExit(timeout: .seconds(20))
                    if end != .exited(0) {
                        failedTransfers.append("\(curl.name): \(end.map(\.description) ?? "running") \(curl.stderrText.trimmingCharacters(in: .whitespacesAndNewlines))")
                    }
                }
                scenario.check(failedTransfers.isEmpty, "\(failedTransfers.count) of \(Self.viewerCount) transfers did not end cleanly (curl exit 0): \(failedTransfers.prefix(5))")
                scenario.note("all curl viewers ended")

                // Every file: valid FLV, headers first, starts on a keyframe, all frames (within 1%).
                var badFiles: [String] = []
                for (curl, file) in viewers {
                    let flv = FLVStream.parse((try? Data(contentsOf: file)).map { [UInt8]($0) } ?? [])
                    let firstVideo = flv.tags.firstIndex { $0.isVideo }
                    let problems = [
                        flv.headerValid ? nil : "no FLV header",
                        flv.error,
                        flv.tags.first(where: { $0.isVideo })?.isAVCSequenceHeader == true ? nil : "first video tag is not the AVC sequence header",
                        flv.tags.first(where: { $0.isAudio })?.isAACSequenceHeader == true ? nil : "first audio tag is not the AAC sequence header",
                        firstVideo.flatMap { flv.tags[($0 + 1)...].first(where: \.isVideo) }?.isKeyframe == true ? nil : "first video frame is not a keyframe",
                        abs(flv.videoFrames.count - media.videoFrames) <= media.videoFrames / 100 ? nil : "\(flv.videoFrames.count) video frames of \(media.videoFrames)",
                        abs(flv.audioFrames.count - media.audioFrames) <= media.audioFrames / 100 ? nil : "\(flv.audioFrames.count) audio frames of \(media.audioFrames)",
                        flv.timestampRegressions().isEmpty ? nil : "timestamps go backwards",
                    ].compactMap { $0 }
                    if !problems.isEmpty {
                        badFiles.append("\(curl.name): \(problems.joined(separator: "; "))")
                    }
                }
                scenario.check(badFiles.isEmpty, "\(badFiles.count) of \(Self.viewerCount) viewers got a bad stream: \(badFiles.prefix(5))")

                // Every file decodes without an error (two decoders at a time).
                let undecodable = await withTaskGroup(of: String?.self) { group in
                    var problems: [String] = []
                    var pending = viewers.makeIterator()
                    func addNext() {
                        guard let (curl, file) = pending.next() else { return }
                        group.addTask {
                            guard let (run, report) = try? await scenario.decodeCheck(file, name: "decode-\(curl.name)") else {
                                return "\(curl.name): ffprobe did not start"
                            }
                            guard run.succeeded, run.stderr.isEmpty, let report else { return "\(curl.name): \(run)" }
                            guard report.video?.codecName == "h264", report.audio?.codecName == "aac" else {
                                return "\(curl.name): codecs \(report.video?.codecName ?? "none")/\(report.audio?.codecName ?? "none")"
                            }
                            guard (report.video?.readFrames ?? 0) > 0, (report.audio?.readFrames ?? 0) > 0 else {
                                return "\(curl.name): \(report.video?.readFrames ?? 0) video / \(report.audio?.readFrames ?? 0) audio frames decoded"
                            }
                            return nil
                        }
                    }
                    addNext()
                    addNext()
                    while let result = await group.next() {
                        if let result { problems.append(result) }
                        addNext()
                    }
                    return problems
                }
                scenario.check(undecodable.isEmpty, "\(undecodable.count) of \(Self.viewerCount) viewer files do not decode cleanly: \(undecodable.prefix(3))")
            }
        }
    }
}
