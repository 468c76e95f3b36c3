import Foundation
import Media
import NIOCore
import TestSupport
import Testing

@testable import LibAV

@Suite struct MemoryMuxerFragmentedMP4Tests {
    /// An init segment and fragments cut at keyframes and every 6 video frames (LL-HLS
    /// parts): each fragment is exactly `moof` + `mdat`, and init + fragments play as one
    /// file with every input frame.
    @Test(.timeLimit(.minutes(2)))
    func initSegmentAndPartsPlayAsOneFile() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceStream.makeH264AAC(seconds: 3, in: directory)
        let muxer = try MemoryMuxer(
            container: .fragmentedMP4,
            video: try VideoTrack(sequenceHeader: try #require(source.videoSequenceHeader)),
            audio: try AudioTrack(sequenceHeader: try #require(source.audioSequenceHeader))
        )

        let initialization = muxer.initializationSegment().bytes
        let initBoxes = try #require(ISOBMFF.topLevelBoxes(initialization))
        #expect(initBoxes.map(\.type) == ["ftyp", "moov"])
        // Not branded CMAF: the cmaf flag brings negative composition offsets, which FFmpeg's
        // demuxer reads one reorder delay late (see MemoryMuxer.fragmentedMP4Flags).
        #expect(!initialization.contains(sequence: Array("cmfc".utf8)))
        // Nothing is written before the first fragment is asked for.
        #expect(try muxer.flushFragment().readableBytes == 0)

        var fragments: [ByteBuffer] = []
        var videoFramesInPart = 0
        var keyframeFragments = 0
        for frame in source.frames {
            let isCodedVideo = frame.isCodedVideo
            if isCodedVideo, frame.isKeyframe || videoFramesInPart == 6 {
                let fragment = try muxer.flushFragment()
                if fragment.readableBytes > 0 {
                    fragments.append(fragment)
                }
                if frame.isKeyframe {
                    keyframeFragments += 1
                }
                videoFramesInPart = 0
            }
            try muxer.write(frame)
            if isCodedVideo {
                videoFramesInPart += 1
            }
        }
        let lastFragment = try muxer.flushFragment()
        #expect(lastFragment.readableBytes > 0)
        fragments.append(lastFragment)
        // Flushing again with nothing written yields nothing.
        #expect(try muxer.flushFragment().readableBytes == 0)
        let trailer = try muxer.finish()
        #expect(trailer.readableBytes == 0, "skip_trailer: no mfra after the last fragment")

        #expect(keyframeFragments == 3)
        #expect(fragments.count == 15)  // 3 GOPs of 30 frames, a part every 6 frames
        for (index, fragment) in fragments.enumerated() {
            let boxes = try #require(ISOBMFF.topLevelBoxes(fragment.bytes), "fragment \(index) has broken box sizes")
            #expect(boxes.map(\.type) == ["moof", "mdat"], "fragment \(index): \(boxes.map(\.type))")
        }

        var file = initialization
        for fragment in fragments {
            file += fragment.bytes
        }
        let url = directory.file("all.mp4")
        try Data(file).write(to: url)
        let streams = try await Probe.streams(of: url, in: directory)
        let video = try #require(streams.first { $0.codecType == "video" })
        let audio = try #require(streams.first { $0.codecType == "audio" })
        #expect(video.codecName == "h264" && video.codecTag == "avc1")
        #expect(video.width == 320 && video.height == 240)
        #expect(video.readFrames == source.videoFrameCount)
        #expect(audio.codecName == "aac" && audio.sampleRate == 44100 && audio.channels == 2)
        #expect(audio.readFrames == source.audioFrameCount)
        let problems = try await Probe.decodeProblems(of: url, in: directory)
        #expect(problems == nil, "\(problems ?? "")")
    }

    /// A muxer started mid-stream keeps the stream's timeline in tfdt (frag_discont)
    /// instead of restarting at zero.
    @Test(.timeLimit(.minutes(1)))
    func fragmentsKeepTheStreamTimeline() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceStream.makeH264AAC(seconds: 1, in: directory)
        let muxer = try MemoryMuxer(
            container: .fragmentedMP4,
            video: try VideoTrack(sequenceHeader: try #require(source.videoSequenceHeader)),
            audio: try AudioTrack(sequenceHeader: try #require(source.audioSequenceHeader))
        )
        var file = muxer.initializationSegment().bytes
        for var frame in source.frames {
            frame.timestamp += 10_000
            try muxer.write(frame)
        }
        file += try muxer.flushFragment().bytes
        let url = directory.file("shifted.mp4")
        try Data(file).write(to: url)
        let streams = try await Probe.streams(of: url, in: directory)
        let videoStart = try #require(streams.first { $0.codecType == "video" }?.startTime)
        let audioStart = try #require(streams.first { $0.codecType == "audio" }?.startTime)
        #expect(videoStart >= 10.0 && videoStart < 10.2, "video starts at \(videoStart), audio at \(audioStart)")
        #expect(audioStart >= 10.0 && audioStart < 10.1, "audio starts at \(audioStart)")
        #expect(streams.first { $0.codecType == "video" }?.readFrames == source.videoFrameCount)
    }
}
