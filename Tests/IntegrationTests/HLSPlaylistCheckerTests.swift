import Foundation
import Testing

/// The playlist checker itself, on hand-written playlists: it must pass a good one and catch
/// each kind of violation (otherwise the live tests that rely on it could not fail).
@Suite("HLS playlist checker")
struct HLSPlaylistCheckerTests {
    static let good = """
        #EXTM3U
        #EXT-X-VERSION:9
        #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.002
        #EXT-X-PART-INF:PART-TARGET=0.334
        #EXT-X-TARGETDURATION:2
        #EXT-X-MEDIA-SEQUENCE:4
        #EXT-X-MAP:URI="init0.mp4"
        #EXT-X-PROGRAM-DATE-TIME:2026-11-22T08:10:38.183Z
        #EXT-X-PART:DURATION=0.334,URI="part4.0.m4s",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.333,URI="part4.1.m4s"
        #EXT-X-PART:DURATION=0.333,URI="part4.2.m4s"
        #EXT-X-PART:DURATION=0.334,URI="part4.3.m4s"
        #EXT-X-PART:DURATION=0.333,URI="part4.4.m4s"
        #EXT-X-PART:DURATION=0.333,URI="part4.5.m4s"
        #EXTINF:2.000,
        seg4.m4s
        #EXT-X-PROGRAM-DATE-TIME:2026-11-22T08:10:40.188Z
        #EXT-X-PART:DURATION=0.334,URI="part5.0.m4s",INDEPENDENT=YES
        #EXT-X-PART:DURATION=0.333,URI="part5.1.m4s"
        #EXT-X-PRELOAD-HINT:TYPE=PART,URI="part5.2.m4s"

        """

    func problems(_ text: String) throws -> [String] {
        HLSPlaylistChecker.check(try MediaPlaylist.parse(text), variant: .lowLatency)
    }

    @Test("A valid LL-HLS playlist passes")
    func validPasses() throws {
        let playlist = try MediaPlaylist.parse(Self.good)
        #expect(HLSPlaylistChecker.check(playlist, variant: .lowLatency) == [])
        #expect(playlist.segments.map(\.sequence) == [4, 5])
        #expect(playlist.lastPart! == (5, 1))
    }

    @Test(
        "Each violation is caught",
        arguments: [
            ("CAN-BLOCK-RELOAD=YES", "CAN-BLOCK-RELOAD=NO", "CAN-BLOCK-RELOAD"),
            ("PART-HOLD-BACK=1.002", "PART-HOLD-BACK=0.9", "PART-HOLD-BACK"),
            ("DURATION=0.333,URI=\"part4.2", "DURATION=0.400,URI=\"part4.2", "exceeds PART-TARGET"),
            ("DURATION=0.333,URI=\"part4.2", "DURATION=0.200,URI=\"part4.2", "under 85%"),
            ("#EXTINF:2.000,", "#EXTINF:2.600,", "EXT-X-TARGETDURATION"),
            ("URI=\"part5.2.m4s\"", "URI=\"part5.3.m4s\"", "PRELOAD-HINT"),
            ("seg4.m4s", "seg7.m4s", "expected seg4.m4s"),
            ("part5.1.m4s\"", "part5.2.m4s\"", "has URI part5.2.m4s"),
            ("#EXT-X-MAP:URI=\"init0.mp4\"\n", "", "EXT-X-MAP"),
            ("part5.0.m4s\",INDEPENDENT=YES", "part5.0.m4s\"", "INDEPENDENT=YES"),
        ]
    )
    func violationCaught(original: String, replacement: String, expected: String) throws {
        let text = Self.good.replacingOccurrences(of: original, with: replacement)
        #expect(text != Self.good)
        let found = try problems(text)
        #expect(found.contains { $0.contains(expected) }, "expected a problem mentioning \(expected), got \(found)")
    }

    @Test("Progress between polls: the media sequence never goes back or skips a window")
    func progress() throws {
        let earlier = try MediaPlaylist.parse(Self.good)
        let back = try MediaPlaylist.parse(Self.good.replacingOccurrences(of: "MEDIA-SEQUENCE:4", with: "MEDIA-SEQUENCE:3"))
        let jump = try MediaPlaylist.parse(Self.good.replacingOccurrences(of: "MEDIA-SEQUENCE:4", with: "MEDIA-SEQUENCE:9"))
        #expect(HLSPlaylistChecker.checkProgress(from: earlier, to: earlier) == [])
        #expect(HLSPlaylistChecker.checkProgress(from: earlier, to: back).contains { $0.contains("went back") })
        #expect(HLSPlaylistChecker.checkProgress(from: earlier, to: jump).contains { $0.contains("jumped") })
    }

    @Test("Master playlist attributes are checked against the stream")
    func master() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:9
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-STREAM-INF:BANDWIDTH=1051296,AVERAGE-BANDWIDTH=1006928,CODECS="avc1.4d401e,mp4a.40.2",RESOLUTION=640x360,FRAME-RATE=30.000
            src/llhls.m3u8

            """
        let expected = HLSPlaylistChecker.ExpectedVariant(codecs: "avc1.4d401e,mp4a.40.2", width: 640, height: 360, frameRate: 30)
        #expect(HLSPlaylistChecker.checkMaster(try MasterPlaylist.parse(text), mediaPlaylist: "llhls.m3u8", expected: expected) == [])
        for (original, replacement) in [("avc1.4d401e", "avc1.64001f"), ("640x360", "320x180"), ("AVERAGE-BANDWIDTH=1006928,", ""), ("FRAME-RATE=30.000", "FRAME-RATE=25.000"), ("src/llhls.m3u8", "src/index.m3u8")] {
            let broken = try MasterPlaylist.parse(text.replacingOccurrences(of: original, with: replacement))
            #expect(!HLSPlaylistChecker.checkMaster(broken, mediaPlaylist: "llhls.m3u8", expected: expected).isEmpty, "\(original) → \(replacement) not caught")
        }
    }
}
