import Foundation
import Media
import NIOCore
import TestSupport
import Testing

@testable import LibAV

@Suite struct NALUnitsTests {
    @Test func annexBWithThreeAndFourByteStartCodesBecomesLengthPrefixed() throws {
        let annexB: [UInt8] = [0, 0, 0, 1, 0x67, 0xAA, 0xBB, 0, 0, 1, 0x68, 0xCC, 0, 0, 0, 1, 0x65, 0x01, 0x00]
        var output = ByteBuffer()
        let types = try annexB.withUnsafeBytes { bytes in try NALUnits.writeLengthPrefixed(annexB: bytes, into: &output) }
        #expect(types == [7, 8, 5])
        // trailing_zero_8bits after the last NAL unit are not part of it.
        #expect(output.bytes == [0, 0, 0, 3, 0x67, 0xAA, 0xBB, 0, 0, 0, 2, 0x68, 0xCC, 0, 0, 0, 2, 0x65, 0x01])
        try NALUnits.validateLengthPrefixed(output, lengthSize: 4)
    }

    @Test func bytesWithoutStartCodeAreRejected() {
        #expect(throws: AVError.malformedNALUnits(offset: 0)) {
            try [UInt8]([0x65, 0x88, 0x84]).withUnsafeBytes { try NALUnits.annexBRanges($0) }
        }
    }

    @Test func lengthPrefixesMustTileThePayload() {
        #expect(throws: AVError.malformedNALUnits(offset: 6)) {
            try NALUnits.validateLengthPrefixed(ByteBuffer(bytes: [0, 0, 0, 2, 0x65, 0x01, 0, 0, 0, 9, 0x41]), lengthSize: 4)
        }
        #expect(throws: AVError.malformedNALUnits(offset: 0)) {
            try NALUnits.validateLengthPrefixed(ByteBuffer(bytes: [0, 0, 0, 0]), lengthSize: 4)
        }
        #expect(throws: AVError.malformedNALUnits(offset: 0)) {
            try NALUnits.validateLengthPrefixed(ByteBuffer(), lengthSize: 4)
        }
    }

    @Test func annexBWithoutPPSIsNoConfiguration() {
        #expect(throws: AVError.missingParameterSets) {
            try [UInt8]([0, 0, 0, 1, 0x67, 0x64, 0x00, 0x1F, 0xAC]).withUnsafeBytes {
                _ = try NALUnits.avcDecoderConfigurationRecord(fromAnnexB: $0)
            }
        }
    }
}

@Suite struct VideoCodecTests {
    /// The fixture's keyframe PTS (ms): what every re-encoded rendition must reproduce.
    static func keyframePresentationTimes(of frames: [MediaFrame]) throws -> [Int64] {
        try frames.filter(\.isCodedKeyframe).map { $0.timestamp + Int64(try VideoTagHeader(from: $0.payload).compositionTime) }
    }

    @Test(.timeLimit(.minutes(2)))
    func decoderOutputsEveryPictureWithSourceKeyframesMarked() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceStream.makeH264AAC(seconds: 3, in: directory)
        let decoder = try VideoDecoder(sequenceHeader: try #require(source.videoSequenceHeader))
        #expect(decoder.track.width == 320 && decoder.track.height == 240)
        var pictures: [VideoFrame] = []
        for frame in source.frames where frame.kind == .video {
            pictures += try decoder.decode(frame)
        }
        pictures += decoder.flush()
        #expect(pictures.count == source.videoFrameCount)
        #expect(decoder.statistics.decodedFrames == source.videoFrameCount)
        #expect(decoder.statistics.corruptFrames == 0)
        let times = pictures.map(\.presentationTime)
        #expect(times == times.sorted())
        #expect(pictures.filter(\.isSourceKeyframe).map(\.presentationTime) == (try Self.keyframePresentationTimes(of: source.frames)))
        #expect(pictures.allSatisfy { $0.width == 320 && $0.height == 240 && $0.pixelFormatName == "yuv420p" })
    }

    /// Decode → scale → libx264 → FLV: ffprobe decodes every frame, the sequence header
    /// parses with Media's record parser, keyframes sit at the source's keyframe PTS.
    @Test(.timeLimit(.minutes(2)))
    func decodeScaleEncodeRoundTripProducesFramesFFprobeDecodes() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceStream.makeH264AAC(seconds: 3, in: directory)
        let decoder = try VideoDecoder(sequenceHeader: try #require(source.videoSequenceHeader))
        let scaler = try Scaler(width: 160, height: 120)
        let encoder = try VideoEncoder(settings: .init(width: 160, height: 120, bitRate: 200_000, frameRate: 30))

        let header = encoder.sequenceHeader(timestamp: 0)
        let record = try AVCDecoderConfigurationRecord(from: encoder.decoderConfiguration)
        #expect(record.sequenceParameterSet.width == 160 && record.sequenceParameterSet.height == 120)
        #expect(record.nalUnitLengthSize == 4)
        #expect(try VideoTrack(sequenceHeader: header).codecString == record.codecString)

        var output = [header]
        func encode(_ pictures: [VideoFrame]) throws {
            for picture in pictures {
                output += try encoder.encode(try scaler.scale(picture))
            }
        }
        for frame in source.frames where frame.kind == .video {
            try encode(try decoder.decode(frame))
        }
        try encode(decoder.flush())
        output += try encoder.flush()

        let coded = output.filter(\.isCodedVideo)
        #expect(coded.count == source.videoFrameCount)
        #expect(encoder.statistics.framesEncoded == source.videoFrameCount)
        // No B-frames: DTS = PTS, composition time 0.
        #expect(try coded.allSatisfy { try VideoTagHeader(from: $0.payload).compositionTime == 0 })
        // The header each frame carries (so nothing downstream parses it again) is the one its bytes say.
        #expect(try output.allSatisfy { $0.tagHeader == .video(try VideoTagHeader(from: $0.payload)) })
        #expect(try Self.keyframePresentationTimes(of: output) == (try Self.keyframePresentationTimes(of: source.frames)))

        let url = directory.file("roundtrip.flv")
        try FLVFile.write(output, to: url)
        #expect(try await Probe.decodeProblems(of: url, in: directory) == nil)
        let stream = try #require(try await Probe.streams(of: url, in: directory).first)
        #expect(stream.codecName == "h264")
        #expect(stream.width == 160 && stream.height == 120)
        #expect(stream.readFrames == source.videoFrameCount)
    }

    @Test(.timeLimit(.minutes(2)))
    func sameSizeScalingPassesTheDecodedPictureThrough() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceStream.makeH264AAC(seconds: 1, in: directory)
        let decoder = try VideoDecoder(sequenceHeader: try #require(source.videoSequenceHeader))
        let scaler = try Scaler(width: 320, height: 240)
        let keyframe = source.frames.first { $0.isCodedKeyframe }
        let frame = try #require(keyframe)
        let decoded = try decoder.decode(frame) + decoder.flush()
        let picture = try #require(decoded.first)
        let scaled = try scaler.scale(picture)
        #expect(scaled !== picture)
        #expect(scaled.firstPlane == picture.firstPlane)  // same buffer, new reference
        #expect(scaled.isSourceKeyframe)
    }

    @Test func oddSizesAreRejected() {
        #expect(throws: AVError.invalidPicture(width: 161, height: 120)) { try Scaler(width: 161, height: 120) }
        #expect(throws: AVError.invalidPicture(width: 160, height: 0)) {
            try VideoEncoder(settings: .init(width: 160, height: 0, bitRate: 100_000, frameRate: 30))
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func frameRateCapDropsPicturesButNeverSourceKeyframes() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceStream.makeH264AAC(seconds: 2, in: directory)
        let decoder = try VideoDecoder(sequenceHeader: try #require(source.videoSequenceHeader))
        let scaler = try Scaler(width: 160, height: 120)
        var settings = VideoEncoder.Settings(width: 160, height: 120, bitRate: 150_000, frameRate: 30, maximumFrameRate: 15)
        settings.threadCount = 1
        let encoder = try VideoEncoder(settings: settings)
        var output: [MediaFrame] = []
        var pictures: [VideoFrame] = []
        for frame in source.frames where frame.kind == .video {
            pictures += try decoder.decode(frame)
        }
        pictures += decoder.flush()
        for picture in pictures where encoder.admit(presentationTime: picture.presentationTime, isSourceKeyframe: picture.isSourceKeyframe) {
            output += try encoder.encode(try scaler.scale(picture))
        }
        output += try encoder.flush()
        #expect(output.count == 30)  // 60 pictures at 30 fps capped to 15 fps
        #expect(encoder.statistics.droppedByFrameRateCap == 30)
        #expect(try Self.keyframePresentationTimes(of: output) == (try Self.keyframePresentationTimes(of: source.frames)))
    }

    /// A frame whose NAL length prefix is destroyed, and one whose slice data is garbage:
    /// the first is rejected before libavcodec and counted, the second is decoded with
    /// concealment or rejected; the decoder keeps going either way and later GOPs decode.
    @Test(.timeLimit(.minutes(2)))
    func corruptFramesAreSkippedAndCounted() async throws {
        let directory = try TemporaryDirectory()
        let source = try await SourceStream.makeH264AAC(seconds: 3, in: directory)
        let decoder = try VideoDecoder(sequenceHeader: try #require(source.videoSequenceHeader))
        let video = source.frames.filter { $0.kind == .video }
        let codedIndices = video.indices.filter { video[$0].isCodedVideo }
        var errors: [AVError] = []
        var pictures: [VideoFrame] = []
        for (position, index) in codedIndices.enumerated() {
            var frame = video[index]
            var payload = frame.payload
            if position == 10 {
                // Length prefix claims more bytes than there are.
                payload.setInteger(UInt32(0x7FFF_FFFF), at: payload.readerIndex + 5)
            } else if position == 40 {
                // Slice data replaced by noise after the first NAL unit bytes.
                let start = payload.readerIndex + 12
                for offset in start..<(payload.writerIndex - 1) {
                    payload.setInteger(UInt8(truncatingIfNeeded: offset &* 131 &+ 7), at: offset)
                }
            }
            if position == 10 || position == 40 {
                frame = try MediaFrame.classified(kind: .video, timestamp: frame.timestamp, payload: payload)
            }
            do {
                pictures += try decoder.decode(frame)
            } catch {
                errors.append(error)
            }
        }
        pictures += decoder.flush()
        #expect(errors.first == .malformedNALUnits(offset: 0))
        #expect(decoder.statistics.corruptFrames == errors.count)
        #expect(decoder.statistics.corruptFrames >= 1)
        // The last GOP (keyframe at 2 s) decodes completely.
        let lastKeyframe = try #require(try Self.keyframePresentationTimes(of: source.frames).last)
        #expect(pictures.filter { $0.presentationTime >= lastKeyframe }.count == 30)
        #expect(pictures.contains { $0.presentationTime == lastKeyframe && $0.isSourceKeyframe })
    }

    @Test(.timeLimit(.minutes(3)))
    func hevcFromEnhancedRTMPDecodes() async throws {
        let directory = try TemporaryDirectory()
        let source = try await HEVCSource.make(in: directory)
        let decoder = try VideoDecoder(sequenceHeader: try #require(source.videoSequenceHeader))
        var pictures: [VideoFrame] = []
        for frame in source.frames {
            pictures += try decoder.decode(frame)
        }
        pictures += decoder.flush()
        #expect(pictures.count == source.videoFrameCount)
        #expect(pictures.filter(\.isSourceKeyframe).count == 2)
        #expect(pictures.allSatisfy { $0.width == 320 && $0.height == 240 })
    }
}

/// Writes frames as an FLV file (header, PreviousTagSize0, tags) with Media's encoder.
enum FLVFile {
    static func write(_ frames: [MediaFrame], to url: URL) throws {
        var buffer = FLVFileHeader.httpFLVPreamble(
            hasAudio: frames.contains { $0.kind == .audio },
            hasVideo: frames.contains { $0.kind == .video },
            allocator: ByteBufferAllocator()
        )
        for frame in frames {
            FLVTagEncoder.encode(frame, into: &buffer)
        }
        try Data(buffer.bytes).write(to: url)
    }
}
