import Foundation
import Media
import NIOCore
import TestSupport
import Testing

@testable import LibAV

@Suite struct MemoryMuxerHEVCTests {
    /// Enhanced-RTMP `hvc1` frames become hvc1-tagged fMP4 and Annex B H.265 in MPEG-TS
    /// (libavformat's automatic hevc_mp4toannexb), both decoding every frame.
    @Test(.timeLimit(.minutes(3)))
    func enhancedRTMPHEVCMuxesToBothContainers() async throws {
        let directory = try TemporaryDirectory()
        let source = try await HEVCSource.make(in: directory)
        let video = try VideoTrack(sequenceHeader: try #require(source.videoSequenceHeader))
        #expect(video.codec == .hevc)
        #expect(video.width == 320 && video.height == 240)
        #expect(video.codecString.hasPrefix("hvc1.1."))
        // Older SDKs send the same record as legacy codec id 12 (0x1C = keyframe | 12).
        let legacyHeader = try MediaFrame.classified(
            kind: .video,
            timestamp: 0,
            payload: ByteBuffer(bytes: [0x1C, 0x00, 0x00, 0x00, 0x00] + video.decoderConfiguration.bytes)
        )
        let legacy = try VideoTrack(sequenceHeader: legacyHeader)
        #expect(legacy.codec == .hevc && legacy.decoderConfiguration == video.decoderConfiguration)

        for container in [MemoryMuxer.Container.mpegTS, .fragmentedMP4] {
            let muxer = try MemoryMuxer(container: container, video: video, audio: nil)
            var file = muxer.initializationSegment().bytes
            var segmentCount = 0
            for frame in source.frames {
                if frame.isCodedKeyframe {
                    let output = container == .mpegTS ? try muxer.takeOutput() : try muxer.flushFragment()
                    segmentCount += output.readableBytes > 0 ? 1 : 0
                    file += output.bytes
                }
                try muxer.write(frame)
            }
            file += (container == .mpegTS ? try muxer.takeOutput() : try muxer.flushFragment()).bytes
            file += try muxer.finish().bytes
            #expect(segmentCount == 1)  // 60 frames, keyframes at 0 and 30: one cut before frame 30

            let url = directory.file(container == .mpegTS ? "hevc.ts" : "hevc-out.mp4")
            try Data(file).write(to: url)
            if container == .mpegTS {
                // hevc_mp4toannexb put the VPS (NAL type 32: 0x40 0x01) in band.
                #expect(file.contains(sequence: [0x00, 0x00, 0x00, 0x01, 0x40, 0x01]))
            }
            let streams = try await Probe.streams(of: url, in: directory)
            let stream = try #require(streams.first { $0.codecType == "video" })
            #expect(stream.codecName == "hevc")
            #expect(stream.width == 320 && stream.height == 240)
            #expect(stream.readFrames == source.videoFrameCount)
            if container == .fragmentedMP4 {
                #expect(stream.codecTag == "hvc1")
            }
            let problems = try await Probe.decodeProblems(of: url, in: directory)
            #expect(problems == nil, "\(container): \(problems ?? "")")
        }
        #expect(source.videoFrameCount == 60)
    }
}
