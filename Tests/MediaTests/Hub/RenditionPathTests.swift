import Media
import Testing

/// What a viewer's (application, name) names: a source, a rung (`app/name` + `rung`), or an
/// old-style `name_rung` that falls back to a rung; nothing else.
struct RenditionPathTests {
    @Test func aPlainNameIsTheSourceAndAnUnderscoreNameAlsoOffersTheOldRungAddress() throws {
        let plain = try #require(RequestedRendition(app: "live", name: "cam"))
        #expect(plain.primary == .source(try StreamPath(app: "live", name: "cam")))
        #expect(plain.fallback == nil)

        let old = try #require(RequestedRendition(app: "abr", name: "demo_cam_480p"))
        #expect(old.primary == .source(try StreamPath(app: "abr", name: "demo_cam_480p")))
        // Split at the last underscore: the stream keeps its own underscores.
        #expect(old.fallback == (try RenditionPath(stream: StreamPath(app: "abr", name: "demo_cam"), rendition: "480p")))
        #expect(old.candidates.count == 2)
        // Nothing before or after the underscore: no fallback.
        #expect(RequestedRendition(app: "abr", name: "_480p")?.fallback == nil)
        #expect(RequestedRendition(app: "abr", name: "demo_")?.fallback == nil)
    }

    @Test func aTwoPartApplicationNamesARungAndNothingElseIsAccepted() throws {
        let rung = try #require(RequestedRendition(app: "abr/demo", name: "480p"))
        #expect(rung.primary == (try RenditionPath(stream: StreamPath(app: "abr", name: "demo"), rendition: "480p")))
        #expect(rung.fallback == nil)
        #expect(rung.description == "abr/demo/480p")
        for (app, name) in [("abr/demo/x", "480p"), ("abr/", "480p"), ("/demo", "480p"), ("abr/demo", ""), ("abr/demo", "src"),
                            ("abr/demo", "../x"), ("abr/.demo", "480p"), ("", "demo"), ("abr", "demo/480p")] {
            #expect(RequestedRendition(app: app, name: name) == nil, "\(app) + \(name) was accepted")
        }
    }

    @Test func aRungIsNotItsSourceAndSrcIsNoRungName() throws {
        let stream = try StreamPath(app: "abr", name: "demo")
        let rung = try RenditionPath(stream: stream, rendition: "480p")
        #expect(rung != .source(stream))
        #expect(rung.renditionName == "480p" && RenditionPath.source(stream).renditionName == "src")
        #expect(throws: StreamPathError.invalidRendition("src")) { try RenditionPath(stream: stream, rendition: "src") }
        // The look-alike stream and the rung are different keys.
        #expect(RenditionPath.source(try StreamPath(app: "abr", name: "demo_480p")) != rung)
    }
}
