import Foundation
import Media
import NIOCore
import TestSupport
import Testing

@testable import LibAV

@Suite struct MemoryMuxerMPEGTSTests {
    /// Segments cut before every video keyframe: each starts with PAT/PMT, carries Annex B
    /// H.264 with SPS/PPS and ADTS AAC, decodes on its own, and together they hold every
    /// input video frame.
    @Test(.timeLimit(.minutes(2)))
    func segmentsAtKeyframesDecodeIndependently() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceStream.makeH264AAC(seconds: 3, in: directory)
        let video = try VideoTrack(sequenceHeader: try #require(source.videoSequenceHeader))
        let audio = try AudioTrack(sequenceHeader: try #require(source.audioSequenceHeader))
        #expect(video.codec == .avc)
        #expect(video.width == 320 && video.height == 240)
        #expect(video.codecString.hasPrefix("avc1.64"))
        #expect(audio.sampleRate == 44100 && audio.channelCount == 2)

        let muxer = try MemoryMuxer(container: .mpegTS, video: video, audio: audio)
        #expect(muxer.initializationSegment().readableBytes == 0)
        var segments: [ByteBuffer] = []
        var wroteCodedFrame = false
        for frame in source.frames {
            if frame.isCodedKeyframe, wroteCodedFrame {
                segments.append(try muxer.takeOutput())
            }
            // Script and sequence header frames go through write() too: they are skipped.
            try muxer.write(frame)
            wroteCodedFrame = wroteCodedFrame || frame.isCodedVideo || frame.kind == .audio && !frame.isSequenceHeader
        }
        var last = try muxer.takeOutput()
        var trailer = try muxer.finish()
        last.writeBuffer(&trailer)
        segments.append(last)

        #expect(segments.count == 3)  // 90 frames, a keyframe every 30
        var decodedVideoFrames = 0
        for (index, segment) in segments.enumerated() {
            let bytes = segment.bytes
            let pids = try #require(TransportStream.pids(bytes), "segment \(index) is not whole TS packets")
            let programMapPIDs = TransportStream.programMapPIDs(bytes)
            #expect(programMapPIDs.count == 1)
            let patIndex = try #require(pids.firstIndex(of: 0), "segment \(index) has no PAT")
            let pmtIndex = try #require(pids.firstIndex(of: programMapPIDs.first ?? -1), "segment \(index) has no PMT")
            let siPIDs = Set([0, 0x11] + programMapPIDs)
            let firstElementary = try #require(pids.firstIndex { !siPIDs.contains($0) })
            // PAT and PMT come before any PES packet (FFmpeg writes SDT, PAT, PMT).
            #expect(patIndex < firstElementary && pmtIndex < firstElementary, "segment \(index): PAT \(patIndex) PMT \(pmtIndex) first PES \(firstElementary)")
            #expect(patIndex <= 1)
            // Annex B: libavformat's automatic h264_mp4toannexb turned the AVCC input
            // into start codes and put the SPS (NAL type 7) before the IDR; mpegtsenc
            // wrapped AAC in ADTS (sync word 0xFFF, MPEG-4, no CRC).
            #expect(bytes.contains(sequence: [0x00, 0x00, 0x00, 0x01, 0x67]) || bytes.contains(sequence: [0x00, 0x00, 0x01, 0x67]), "segment \(index): no Annex B SPS")
            #expect(bytes.contains(sequence: [0x00, 0x00, 0x00, 0x01, 0x09]), "segment \(index): no access unit delimiter")
            #expect(bytes.contains(sequence: [0xFF, 0xF1]), "segment \(index): no ADTS header")

            let file = directory.file("segment\(index).ts")
            try Data(bytes).write(to: file)
            let streams = try await Probe.streams(of: file, in: directory)
            let videoStream = try #require(streams.first { $0.codecType == "video" })
            let audioStream = try #require(streams.first { $0.codecType == "audio" })
            #expect(videoStream.codecName == "h264")
            #expect(videoStream.width == 320 && videoStream.height == 240)
            #expect(audioStream.codecName == "aac")
            #expect(audioStream.sampleRate == 44100 && audioStream.channels == 2)
            #expect((audioStream.readFrames ?? 0) > 30)
            decodedVideoFrames += videoStream.readFrames ?? 0
            let problems = try await Probe.decodeProblems(of: file, in: directory)
            #expect(problems == nil, "segment \(index): \(problems ?? "")")
        }
        #expect(decodedVideoFrames == source.videoFrameCount)
        #expect(source.videoFrameCount == 90)
    }

    /// The TS timeline is the input's: a stream that starts at 10 s stays at 10 s.
    @Test(.timeLimit(.minutes(1)))
    func timestampsFollowTheInput() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceStream.makeH264AAC(seconds: 1, in: directory)
        let muxer = try MemoryMuxer(
            container: .mpegTS,
            video: try VideoTrack(sequenceHeader: try #require(source.videoSequenceHeader)),
            audio: try AudioTrack(sequenceHeader: try #require(source.audioSequenceHeader))
        )
        var output = ByteBuffer()
        for var frame in source.frames {
            frame.timestamp += 10_000
            try muxer.write(frame)
        }
        var rest = try muxer.finish()
        output.writeBuffer(&rest)
        let file = directory.file("shifted.ts")
        try Data(output.bytes).write(to: file)
        let streams = try await Probe.streams(of: file, in: directory)
        let videoStart = try #require(streams.first { $0.codecType == "video" }?.startTime)
        #expect(videoStart >= 10.0 && videoStart < 11.5, "video starts at \(videoStart)")
    }
}
