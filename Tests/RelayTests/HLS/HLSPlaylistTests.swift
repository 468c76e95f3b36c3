import Foundation
import NIOCore
import Testing

@testable import Relay

@Suite struct HLSPlaylistTests {
    static func segment(_ sequence: Int, duration: Double?, parts: Int, discontinuity: Bool = false, initSection: Int = 0) -> HLSRendition.Segment {
        var segment = HLSRendition.Segment(sequence: sequence, initSection: initSection, discontinuity: discontinuity, programDateTime: 1_700_000_000 + Double(sequence) * 2)
        segment.parts = (0..<parts).map { index in
            HLSRendition.Part(duration: 0.334, independent: index == 0, data: ByteBuffer(bytes: [UInt8(index)]))
        }
        segment.duration = duration
        segment.transportStream = duration == nil ? nil : ByteBuffer(bytes: [0x47])
        return segment
    }

    @Test func classicPlaylistListsOnlyCompleteSegmentsWithTargetDuration() {
        let text = HLSPlaylist.media(
            variant: .transportStream,
            segments: [Self.segment(5, duration: 2.0, parts: 6), Self.segment(6, duration: 1.967, parts: 6), Self.segment(7, duration: nil, parts: 2)],
            discontinuitySequence: 0, ended: false, configuration: HLSConfiguration(), reports: []
        )
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.first == "#EXTM3U")
        #expect(lines.contains("#EXT-X-TARGETDURATION:2"))
        #expect(lines.contains("#EXT-X-MEDIA-SEQUENCE:5"))
        #expect(lines.contains("#EXTINF:2.000,"))
        #expect(lines.contains("#EXTINF:1.967,"))
        #expect(lines.contains("seg5.ts") && lines.contains("seg6.ts"))
        #expect(!lines.contains("seg7.ts"))
        #expect(!text.contains("EXT-X-PART"))
        #expect(!text.contains("#EXT-X-ENDLIST"))
    }

    @Test func lowLatencyPlaylistHasPartsHintServerControlAndReports() {
        let text = HLSPlaylist.media(
            variant: .lowLatency,
            segments: [Self.segment(1, duration: 2.0, parts: 6), Self.segment(2, duration: 2.0, parts: 6), Self.segment(3, duration: 2.0, parts: 6), Self.segment(4, duration: nil, parts: 2)],
            discontinuitySequence: 0, ended: false, configuration: HLSConfiguration(),
            reports: [.init(uri: "../480p/llhls.m3u8", lastSequence: 4, lastPart: 1)]
        )
        #expect(text.contains("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.002"))
        #expect(text.contains("#EXT-X-PART-INF:PART-TARGET=0.334"))
        #expect(text.contains("#EXT-X-MAP:URI=\"init0.mp4\""))
        // Parts only for the last three segments (2, 3 and the open 4), not for segment 1.
        #expect(!text.contains("part1.0.m4s"))
        #expect(text.contains("#EXT-X-PART:DURATION=0.334,URI=\"part2.0.m4s\",INDEPENDENT=YES"))
        #expect(text.contains("#EXT-X-PART:DURATION=0.334,URI=\"part4.1.m4s\""))
        #expect(text.contains("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"part4.2.m4s\""))
        #expect(text.contains("#EXT-X-RENDITION-REPORT:URI=\"../480p/llhls.m3u8\",LAST-MSN=4,LAST-PART=1"))
        #expect(text.contains("seg3.m4s") && !text.contains("seg4.m4s"))
    }

    /// An HLS session's query goes on every URI a player follows: segments, the map, parts,
    /// the preload hint and rendition reports; no tag without a URI changes.
    @Test func aSessionQueryGoesOnEveryURI() {
        let text = HLSPlaylist.media(
            variant: .lowLatency,
            segments: [Self.segment(5, duration: 2.0, parts: 2), Self.segment(6, duration: nil, parts: 1)],
            discontinuitySequence: 0, ended: false, configuration: HLSConfiguration(),
            reports: [.init(uri: "../240p/llhls.m3u8", lastSequence: 6, lastPart: 0)]
        )
        let query = "session=v-0123456789abcdef&token=abc"
        let rewritten = HLSPlaylist.appendingQuery(query, to: text)
        let lines = rewritten.split(separator: "\n").map(String.init)
        #expect(lines.contains("seg5.m4s?\(query)"))
        #expect(lines.contains("#EXT-X-MAP:URI=\"init0.mp4?\(query)\""))
        #expect(lines.contains { $0.hasPrefix("#EXT-X-PART:") && $0.contains("URI=\"part6.0.m4s?\(query)\"") })
        #expect(lines.contains { $0.hasPrefix("#EXT-X-PRELOAD-HINT:") && $0.contains("?\(query)\"") })
        #expect(lines.contains { $0.hasPrefix("#EXT-X-RENDITION-REPORT:URI=\"../240p/llhls.m3u8?\(query)\",LAST-MSN=6") })
        // Every URI, and nothing else.
        let uris = lines.filter { !$0.hasPrefix("#") }.count + lines.map { $0.components(separatedBy: "URI=\"").count - 1 }.reduce(0, +)
        #expect(rewritten.components(separatedBy: "?" + query).count - 1 == uris)
        #expect(lines.filter { !$0.contains("URI") && $0.hasPrefix("#") } == text.split(separator: "\n").map(String.init).filter { !$0.contains("URI") && $0.hasPrefix("#") })
        // A master's variant URIs.
        let master = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nsrc/index.m3u8\n"
        #expect(HLSPlaylist.appendingQuery(query, to: master) == "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nsrc/index.m3u8?\(query)\n")
    }

    @Test func sessionAndCarriedParametersAreSplitFromARequestsQuery() {
        #expect(HLSRoutes.split("session=v-1&token=abc&_HLS_msn=3&_HLS_part=1") == ("v-1", "token=abc"))
        #expect(HLSRoutes.split("") == (nil, ""))
        #expect(HLSRoutes.split("token=" + String(repeating: "x", count: 2000)).carried == "")
    }

    @Test func endedPlaylistHasEndlistAndNoHint() {
        let text = HLSPlaylist.media(variant: .lowLatency, segments: [Self.segment(0, duration: 2.0, parts: 6)], discontinuitySequence: 0, ended: true, configuration: HLSConfiguration(), reports: [])
        #expect(text.hasSuffix("#EXT-X-ENDLIST\n"))
        #expect(!text.contains("PRELOAD-HINT"))
    }

    @Test func discontinuitiesAndNewInitSectionsAreMarked() {
        let text = HLSPlaylist.media(
            variant: .lowLatency,
            segments: [Self.segment(8, duration: 2.0, parts: 1), Self.segment(9, duration: 2.0, parts: 1, discontinuity: true, initSection: 1)],
            discontinuitySequence: 2, ended: false, configuration: HLSConfiguration(), reports: []
        )
        #expect(text.contains("#EXT-X-DISCONTINUITY-SEQUENCE:2"))
        #expect(text.contains("#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI=\"init1.mp4\""))
    }

    @Test func masterPlaylistCarriesBandwidthResolutionFrameRateAndCodecs() {
        var description = HLSRendition.Description()
        description.codecs = ["avc1.64001f", "mp4a.40.2"]
        description.width = 1280
        description.height = 720
        description.frameRate = 30
        let text = HLSPlaylist.master(variant: .lowLatency, streams: [.init(uri: "src/llhls.m3u8", description: description, peakBitrate: 2_900_000, averageBitrate: 2_700_000)])
        #expect(text.contains("#EXT-X-STREAM-INF:BANDWIDTH=2900000,AVERAGE-BANDWIDTH=2700000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720,FRAME-RATE=30.000\nsrc/llhls.m3u8"))
    }

    @Test func alternateAudioIsAGroupEveryVariantNames() {
        var description = HLSRendition.Description()
        description.codecs = ["avc1.64001f", "mp4a.40.2"]
        description.width = 1280
        description.height = 720
        description.hasAudio = true
        description.audioChannels = 2
        let audio = [HLSPlaylist.AlternateAudio(name: "audio1", uri: "audio1/llhls.m3u8", codecs: ["mp4a.40.2"], channels: 1, peakBitrate: 130_000, averageBitrate: 128_000)]
        let text = HLSPlaylist.master(variant: .lowLatency, streams: [.init(uri: "src/llhls.m3u8", description: description, peakBitrate: 2_900_000, averageBitrate: 2_700_000)], audio: audio)
        let lines = text.split(separator: "\n").map(String.init)
        // The variant's own audio is the default, without a URI; the other has its playlist,
        // and is chosen rather than picked automatically.
        // Each says its channels: stereo for the variants' own, mono for the alternate.
        #expect(lines.contains("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"main\",DEFAULT=YES,AUTOSELECT=YES,CHANNELS=\"2\""))
        #expect(lines.contains("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"audio1\",DEFAULT=NO,AUTOSELECT=NO,CHANNELS=\"1\",URI=\"audio1/llhls.m3u8\""))
        // BANDWIDTH counts the variant with its largest alternate.
        #expect(lines.contains("#EXT-X-STREAM-INF:BANDWIDTH=3030000,AVERAGE-BANDWIDTH=2828000,CODECS=\"avc1.64001f,mp4a.40.2\",RESOLUTION=1280x720,AUDIO=\"audio\""))
        #expect(!lines.contains("audio1/llhls.m3u8"))
        // Variants without audio of their own: no URI-less entry (it would say the audio is
        // in them); the first alternate is the default.
        description.hasAudio = false
        let silent = HLSPlaylist.master(variant: .lowLatency, streams: [.init(uri: "src/llhls.m3u8", description: description, peakBitrate: 1, averageBitrate: 0)], audio: audio)
        #expect(!silent.contains("NAME=\"main\""))
        #expect(silent.contains("NAME=\"audio1\",DEFAULT=YES,AUTOSELECT=YES,CHANNELS=\"1\",URI=\"audio1/llhls.m3u8\""))
        // Variants whose audio differs (a ladder's stereo rungs beside a 5.1 source): the
        // entry that stands for all of them says no channel count.
        description.hasAudio = true
        var surround = description
        surround.audioChannels = 6
        let mixed = HLSPlaylist.master(variant: .lowLatency, streams: [
            .init(uri: "src/llhls.m3u8", description: surround, peakBitrate: 1, averageBitrate: 0),
            .init(uri: "720p/llhls.m3u8", description: description, peakBitrate: 1, averageBitrate: 0),
        ], audio: audio)
        #expect(mixed.contains("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"main\",DEFAULT=YES,AUTOSELECT=YES\n"))
        // Without alternate audio, no group.
        #expect(!HLSPlaylist.master(variant: .lowLatency, streams: [.init(uri: "src/llhls.m3u8", description: description, peakBitrate: 1, averageBitrate: 0)]).contains("AUDIO"))
    }

    @Test(arguments: [("audio1", true), ("audio12", true), ("audio", false), ("audiox", false), ("track1", false), ("audio-1", false), ("src", false)])
    func alternateAudioRenditionNames(name: String, expected: Bool) {
        #expect(HLSRoutes.isAlternateAudio(name) == expected)
    }

    @Test func programDateTimeIsISO8601() {
        #expect(HLSPlaylist.iso8601(0) == "1970-01-01T00:00:00.000Z")
        #expect(HLSPlaylist.iso8601(1_700_000_000.25) == "2023-11-14T22:13:20.250Z")
        #expect(HLSPlaylist.iso8601(951_782_400) == "2000-02-29T00:00:00.000Z")
    }

    @Test(arguments: [
        ("index.m3u8", HLSResource.mediaPlaylist(.transportStream)), ("llhls.m3u8", .mediaPlaylist(.lowLatency)),
        ("seg12.ts", .transportStreamSegment(12)), ("seg0.m4s", .fragmentedSegment(0)), ("init3.mp4", .initSection(3)),
        ("part7.2.m4s", .part(sequence: 7, index: 2)),
    ])
    func resourceNamesParse(file: String, expected: HLSResource) {
        #expect(HLSResource(file) == expected)
    }

    @Test(arguments: ["", "seg.ts", "seg-1.ts", "seg1.ts.ts", "../seg1.ts", "seg1234567890.ts", "part1.m4s", "part1.2.3.m4s",
                      "part.1.m4s", "init.mp4", "seg 1.ts", "seg+1.ts", "%2e%2e", "index.m3u", "seg1.TS"])
    func malformedResourceNamesAreRejected(file: String) {
        #expect(HLSResource(file) == nil)
    }

    @Test func boundedIntegersRejectHugeAndSignedValues() {
        #expect(HLSRoutes.boundedInteger("123") == 123)
        #expect(HLSRoutes.boundedInteger("999999999") == 999_999_999)
        #expect(HLSRoutes.boundedInteger("1000000000") == nil)
        #expect(HLSRoutes.boundedInteger("-1") == nil)
        #expect(HLSRoutes.boundedInteger("+1") == nil)
        #expect(HLSRoutes.boundedInteger("") == nil)
        #expect(HLSRoutes.boundedInteger(String(repeating: "9", count: 10_000)) == nil)
    }
}
