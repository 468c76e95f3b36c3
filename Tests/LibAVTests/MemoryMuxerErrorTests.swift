import Media
import NIOCore
import TestSupport
import Testing

@testable import LibAV

@Suite struct MemoryMuxerErrorTests {
    /// 320x240 High profile and AAC-LC 44.1 kHz stereo, so these tests need no ffmpeg.
    static let avcSequenceHeader = SampleConfigurationRecords.avc320x240
    static let aacSequenceHeader = SampleConfigurationRecords.aacLC44100Stereo

    static func frame(_ kind: MediaKind, _ bytes: [UInt8], timestamp: Int64 = 0) throws -> MediaFrame {
        try MediaFrame.classified(kind: kind, timestamp: timestamp, payload: ByteBuffer(bytes: bytes))
    }

    static func videoTrack() throws -> VideoTrack {
        try VideoTrack(sequenceHeader: frame(.video, avcSequenceHeader))
    }

    static func audioTrack() throws -> AudioTrack {
        try AudioTrack(sequenceHeader: frame(.audio, aacSequenceHeader))
    }

    @Test func wellFormedHeadersDescribeTheTracks() throws {
        let video = try Self.videoTrack()
        #expect(video.codec == .avc && video.width == 320 && video.height == 240)
        #expect(video.codecString == "avc1.64000d")
        let audio = try Self.audioTrack()
        #expect(audio.sampleRate == 44100 && audio.channelCount == 2)
    }

    @Test func garbageVideoSequenceHeaderIsATypedError() throws {
        let garbage = try Self.frame(.video, [0x17, 0x00, 0x00, 0x00, 0x00, 0xDE, 0xAD, 0xBE, 0xEF, 0x00, 0x01])
        #expect(throws: AVError.invalidCodecConfiguration(.unsupportedConfigurationVersion(0xDE))) {
            try VideoTrack(sequenceHeader: garbage)
        }
        let truncated = try Self.frame(.video, Array(Self.avcSequenceHeader.prefix(20)))
        #expect {
            try VideoTrack(sequenceHeader: truncated)
        } throws: { error in
            guard case .invalidCodecConfiguration = error as? AVError else { return false }
            return true
        }
    }

    @Test func garbageAudioSequenceHeaderIsATypedError() throws {
        // Object type 2, sampling frequency index 13 (reserved).
        let garbage = try Self.frame(.audio, [0xAF, 0x00, 0x16, 0x88])
        #expect(throws: AVError.invalidCodecConfiguration(.reservedSamplingFrequencyIndex(13))) {
            try AudioTrack(sequenceHeader: garbage)
        }
        // Channel configuration 0: a program config element would define the layout.
        let programConfig = try Self.frame(.audio, [0xAF, 0x00, 0x12, 0x00])
        #expect(throws: AVError.unsupportedChannelConfiguration(0)) {
            try AudioTrack(sequenceHeader: programConfig)
        }
    }

    @Test func unsupportedCodecsAreTypedErrors() throws {
        // Enhanced RTMP vp09 SequenceStart: VP9 has no track here.
        let vp9 = try Self.frame(.video, [0x90] + Array("vp09".utf8) + [0x01, 0x00, 0x00, 0x00])
        #expect(throws: AVError.unsupportedVideoCodec(.vp9)) {
            try VideoTrack(sequenceHeader: vp9)
        }
        // An av01 SequenceStart whose av1C has no sequence header OBU describes no picture.
        let av1 = try Self.frame(.video, [0x90] + Array("av01".utf8) + [0x81, 0x00, 0x0C, 0x00])
        #expect(throws: AVError.invalidCodecConfiguration(.missingSequenceParameterSet)) {
            try VideoTrack(sequenceHeader: av1)
        }
        // A valid AV1 track, but MPEG-TS cannot carry AV1: fMP4 only.
        let av1Track = try VideoTrack(sequenceHeader: Self.frame(.video, [0x90] + Array("av01".utf8) + [0x81, 0x01, 0x0C, 0x00, 0x0A, 0x0B, 0x00, 0x00, 0x00, 0x0C, 0xC4, 0xFF, 0x67, 0x36, 0xBE, 0x40, 0x10]))
        #expect(av1Track.width == 640 && av1Track.height == 360 && av1Track.codecString == "av01.0.01M.08")
        #expect(throws: AVError.unsupportedVideoCodec(.av1)) {
            try MemoryMuxer(container: .mpegTS, video: av1Track, audio: nil)
        }
        let fragmented = try MemoryMuxer(container: .fragmentedMP4, video: av1Track, audio: nil)
        #expect(fragmented.initializationSegment().readableBytes > 0)
        // MP3 (SoundFormat 2) has no sequence header and no track here.
        let mp3 = try Self.frame(.audio, [0x2F, 0xFF, 0xFB])
        #expect(throws: AVError.unsupportedAudioFormat(.mp3)) {
            try AudioTrack(sequenceHeader: mp3)
        }
    }

    @Test func codedFramesAreNotSequenceHeaders() throws {
        let coded = try Self.frame(.video, [0x17, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x65])
        #expect(throws: AVError.notASequenceHeader(.video)) {
            try VideoTrack(sequenceHeader: coded)
        }
        #expect(throws: AVError.notASequenceHeader(.audio)) {
            try AudioTrack(sequenceHeader: Self.frame(.audio, [0xAF, 0x01, 0x21, 0x00]))
        }
        #expect(throws: AVError.notASequenceHeader(.audio)) {
            try AudioTrack(sequenceHeader: coded)
        }
    }

    @Test(arguments: [MemoryMuxer.Container.mpegTS, .fragmentedMP4])
    func framesWithoutTheirTrackAreTypedErrors(container: MemoryMuxer.Container) throws {
        let audioOnly = try MemoryMuxer(container: container, video: nil, audio: Self.audioTrack())
        let videoFrame = try Self.frame(.video, [0x17, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x65, 0x88])
        #expect(throws: AVError.trackNotConfigured(.video)) {
            try audioOnly.write(videoFrame)
        }
        let videoOnly = try MemoryMuxer(container: container, video: Self.videoTrack(), audio: nil)
        #expect(throws: AVError.trackNotConfigured(.audio)) {
            try videoOnly.write(Self.frame(.audio, [0xAF, 0x01, 0x21, 0x00]))
        }
        #expect(throws: AVError.noTracks) {
            try MemoryMuxer(container: container, video: nil, audio: nil)
        }
    }

    /// libavformat's own refusals surface with the call and its code, and the half-built
    /// context is freed (the muxer checks dimensions in avformat_write_header).
    @Test func headerFailureIsATypedError() throws {
        var video = try Self.videoTrack()
        video.width = 0
        #expect(throws: AVError.call(operation: "avformat_write_header", code: -22)) {
            try MemoryMuxer(container: .fragmentedMP4, video: video, audio: nil)
        }
    }

    @Test func changedOrForeignConfigurationIsATypedError() throws {
        let muxer = try MemoryMuxer(container: .fragmentedMP4, video: Self.videoTrack(), audio: Self.audioTrack())
        // The same sequence headers again (as after a reconnect) are accepted and skipped.
        try muxer.write(Self.frame(.video, Self.avcSequenceHeader))
        try muxer.write(Self.frame(.audio, Self.aacSequenceHeader))
        // A different AudioSpecificConfig (48 kHz) needs a new muxer.
        #expect(throws: AVError.configurationChanged(.audio)) {
            try muxer.write(Self.frame(.audio, [0xAF, 0x00, 0x11, 0x90]))
        }
        // An HEVC coded frame on the AVC track.
        let hevcFrame = try Self.frame(.video, [0x91] + Array("hvc1".utf8) + [0, 0, 0, 0, 0, 0, 3, 0x26, 0x01, 0xAF])
        #expect(throws: AVError.codecMismatch(.video)) {
            try muxer.write(hevcFrame)
        }
        // A truncated video tag header.
        #expect(throws: AVError.invalidTagHeader(.truncated(needed: 5, available: 2))) {
            try muxer.write(MediaFrame(kind: .video, timestamp: 0, payload: ByteBuffer(bytes: [0x27, 0x01])))
        }
    }

    @Test func operationsOutsideTheirContainerOrAfterFinishAreRejected() throws {
        let transportStream = try MemoryMuxer(container: .mpegTS, video: Self.videoTrack(), audio: nil)
        #expect(throws: AVError.invalidState(operation: "flushFragment")) {
            try transportStream.flushFragment()
        }
        let fragmented = try MemoryMuxer(container: .fragmentedMP4, video: Self.videoTrack(), audio: nil)
        #expect(throws: AVError.invalidState(operation: "takeOutput")) {
            try fragmented.takeOutput()
        }
        _ = try fragmented.finish()
        #expect(throws: AVError.invalidState(operation: "write")) {
            try fragmented.write(Self.frame(.video, Self.avcSequenceHeader))
        }
        #expect(throws: AVError.invalidState(operation: "finish")) {
            try fragmented.finish()
        }
    }

    /// Output nobody takes is bounded: past the limit the AVIO write callback fails and
    /// the write throws AVERROR(ENOSPC) instead of growing memory.
    @Test func untakenOutputIsBounded() throws {
        let muxer = try MemoryMuxer(container: .mpegTS, video: Self.videoTrack(), audio: nil, maximumBufferedBytes: 64 * 1024)
        let frameBytes: [UInt8] = [0x17, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x65] + [UInt8](repeating: 0xAA, count: 0x3FFF)
        var thrown: AVError?
        for index in 0..<64 where thrown == nil {
            let frame = try Self.frame(.video, frameBytes, timestamp: Int64(index) * 33)
            do {
                try muxer.write(frame)
            } catch {
                thrown = error
            }
        }
        // AVERROR(ENOSPC) is -28 on Linux.
        #expect(thrown?.code == -28, "\(String(describing: thrown))")
        #expect(thrown?.description.contains("av_write_frame") == true)
    }
}
