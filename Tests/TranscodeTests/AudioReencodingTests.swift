import Foundation
import LibAV
import Logging
import Media
import NIOCore
import TestSupport
import Testing

@testable import Transcode

/// Sources whose audio is not AAC (MP3 from older encoders, G.711 from IP cameras, Speex
/// and Nellymoser from Flash-era clients) get AAC in every rendition.
@Suite(.serialized) struct AudioReencodingTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var arguments: [String]
        var sampleRate: Int
        var channels: Int
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "mp3 44.1 kHz stereo", arguments: ["-c:a", "libmp3lame", "-b:a", "128k", "-ar", "44100", "-ac", "2"], sampleRate: 44100, channels: 2),
        Case(name: "G.711 A-law 8 kHz mono", arguments: ["-c:a", "pcm_alaw", "-ar", "8000", "-ac", "1"], sampleRate: 44100, channels: 1),
        Case(name: "Speex 16 kHz mono", arguments: ["-c:a", "libspeex", "-ar", "16000", "-ac", "1"], sampleRate: 44100, channels: 1),
        Case(name: "Nellymoser 22 kHz mono", arguments: ["-c:a", "nellymoser", "-ar", "22050", "-ac", "1"], sampleRate: 44100, channels: 1),
    ]

    @Test(.timeLimit(.minutes(3)), arguments: cases)
    func nonAACAudioIsReencodedToAACInEveryRendition(_ audio: Case) async throws {
        let directory = try TemporaryDirectory()
        let seconds = 4
        let source = try await SourceClip.make(seconds: seconds, size: "320x180", audio: audio.arguments, in: directory)
        let sourceAudio = source.frames.filter { $0.kind == .audio }
        let sourceHeader = try #require(sourceAudio.first.map { try AudioTagHeader(from: $0.payload) })
        #expect(sourceHeader.codec != .aac, "the source must not be AAC")
        let ladder = Ladder(rungs: [
            LadderRung(name: "180p", height: 180, videoBitRate: 300_000),
            LadderRung(name: "90p", height: 90, videoBitRate: 100_000),
        ])
        let collector = RenditionCollector()
        let statistics = try await TranscodePipelineTests.run(source.frames, ladder: ladder, collector: collector)
        #expect(statistics.corruptAudioFrames == 0)
        #expect(statistics.unsupportedAudioFrames == 0)
        #expect(statistics.audioFramesReencoded == sourceAudio.count)

        let sourceFirstAudio = try #require(sourceAudio.first?.timestamp)
        let sourceFirstVideo = try #require(source.frames.first { $0.kind == .video }?.timestamp)
        var perRung: [[Int64]] = []
        for name in ["180p", "90p"] {
            let frames = collector.frames(name)
            let audioFrames = frames.filter { $0.kind == .audio }
            let header = try #require(audioFrames.first, "\(name): no audio")
            #expect(header.isSequenceHeader, "\(name): the AAC sequence header comes first")
            let coded = audioFrames.filter { !$0.isSequenceHeader }
            let times = coded.map(\.timestamp)
            #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "\(name): AAC timestamps not strictly increasing: \(zip(times, times.dropFirst()).filter { $0 >= $1 }.prefix(5)) of \(times.prefix(8))")
            perRung.append(times)

            // What a player sees: ffprobe on the rendition written as FLV.
            let url = directory.file("\(name).flv")
            try FLVFile.write(frames, to: url)
            let probe = try await Tool.run("ffprobe", [
                "-v", "error", "-count_packets", "-select_streams", "a",
                "-show_entries", "stream=codec_name,profile,sample_rate,channels,nb_read_packets", "-of", "json", url.path,
            ], in: directory.url)
            #expect(probe.succeeded, "\(probe)")
            let json = try JSONSerialization.jsonObject(with: probe.stdout) as? [String: Any] ?? [:]
            let stream = (json["streams"] as? [[String: Any]])?.first ?? [:]
            #expect(stream["codec_name"] as? String == "aac", "\(name): \(stream)")
            #expect(stream["profile"] as? String == "LC", "\(name): \(stream)")
            #expect(stream["sample_rate"] as? String == String(audio.sampleRate), "\(name): \(stream)")
            #expect(stream["channels"] as? Int == audio.channels, "\(name): \(stream)")
            // Every second of source audio is there: rate / 1024 AAC frames per second (±5%).
            let packets = Int(stream["nb_read_packets"] as? String ?? "") ?? 0
            let expected = Double(seconds * audio.sampleRate) / 1024
            #expect(abs(Double(packets) - expected) <= 0.05 * expected, "\(name): \(packets) AAC frames, expected about \(Int(expected))")
            // In sync: the audio starts where the source's did, relative to the video, within a frame.
            let firstVideo = try #require(frames.first { $0.kind == .video }?.timestamp)
            let offset = (times.first ?? 0) - firstVideo
            let sourceOffset = sourceFirstAudio - sourceFirstVideo
            #expect(abs(offset - sourceOffset) <= 34, "\(name): audio starts \(offset) ms after video, the source's \(sourceOffset) ms")
            #expect(try await ProbedVideo.decodeProblems(of: url, in: directory) == nil)
        }
        // Encoded once, shared: every rung carries the same audio.
        #expect(perRung.count == 2 && perRung[0] == perRung[1])
    }

    /// The AAC header is announced once, with the first source audio that decodes: when the
    /// first frame does not (an Opus stream's first packet can be cut), the next one carries
    /// it; the header is neither lost (no rendition's HLS could take the audio) nor sent for
    /// audio that never comes.
    @Test func theAACHeaderGoesOutWithTheFirstFrameThatDecodes() throws {
        let transcoder = AudioTranscoder(bitRatePerChannel: 64_000, logger: .init(label: "test"))
        let opus = Array("Opus".utf8)
        // Enhanced RTMP: 0x90 | SequenceStart, "Opus", then libopus's stereo OpusHead.
        let head = Array("OpusHead".utf8) + [0x01, 0x02, 0x38, 0x01, 0x80, 0xBB, 0x00, 0x00, 0x00, 0x00, 0x00]
        let start = MediaFrame(kind: .audio, timestamp: 0, isSequenceHeader: true, payload: ByteBuffer(bytes: [0x90] + opus + head))
        #expect(transcoder.transcode(start, header: try AudioTagHeader(from: start.payload)).isEmpty)
        // CodedFrames whose TOC says code 3 with a frame count the packet cannot hold.
        let broken = MediaFrame(kind: .audio, timestamp: 20, payload: ByteBuffer(bytes: [0x91] + opus + [0xFF, 0xFF]))
        #expect(transcoder.transcode(broken, header: try AudioTagHeader(from: broken.payload)).isEmpty)
        #expect(transcoder.statistics.corruptFrames == 1)
        // A 20 ms CELT silence frame decodes: the header goes out with it.
        let silence = MediaFrame(kind: .audio, timestamp: 40, payload: ByteBuffer(bytes: [0x91] + opus + [0xF8, 0xFF, 0xFE]))
        let output = transcoder.transcode(silence, header: try AudioTagHeader(from: silence.payload))
        #expect(output.first?.isSequenceHeader == true, "\(output)")
        #expect(try AudioTagHeader(from: #require(output.first).payload).codec == .aac)
        #expect(transcoder.statistics.corruptFrames == 1)
    }
}
