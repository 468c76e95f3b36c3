import Media
import Testing

@testable import SRT

/// Stream ids as SRS and MediaMTX users write them, and the ones refused before a session.
struct SRTStreamIDTests {
    @Test(arguments: [
        ("#!::r=live/cam,m=publish", SRTStreamID.Mode.publish, "live/cam", ""),
        ("#!::r=live/cam,m=publish,key=s3cret", .publish, "live/cam", "key=s3cret"),
        ("#!::m=publish,r=live/cam,token=abc,u=me", .publish, "live/cam", "token=abc&u=me"),
        ("#!::r=live/cam,m=request", .play, "live/cam", ""),
        ("#!::r=live/cam", .play, "live/cam", ""),
        ("#!::r=live/cam?key=k1,m=publish", .publish, "live/cam", "key=k1"),
        ("publish:live/cam", .publish, "live/cam", ""),
        ("publish:live/cam?key=k2", .publish, "live/cam", "key=k2"),
        ("publish:live/cam:user:pass", .publish, "live/cam", ""),
        ("read:live/cam", .play, "live/cam", ""),
        ("live/cam?token=t", .play, "live/cam", "token=t"),
        ("%23!::r=live/cam,m=publish,key=k3", .publish, "live/cam", "key=k3"),
    ])
    func conventionsParse(_ text: String, mode: SRTStreamID.Mode, path: String, query: String) throws {
        let id = try SRTStreamID(parsing: text)
        #expect(id.mode == mode)
        #expect(id.path.description == path)
        #expect(id.query == query)
    }

    @Test(arguments: [
        ("", SRTStreamID.Invalid.empty),
        ("#!::m=publish", .missingResource),
        ("#!::r=,m=publish", .missingResource),
        ("#!::r=live/cam,m=upload", .badMode("upload")),
        ("publish:live", .badPath("live")),
        ("publish:live/cam/extra", .badPath("live/cam/extra")),
        ("publish:../etc", .badPath("../etc")),
        ("read:", .missingResource),
        ("live/ca m", .badPath("live/ca m")),
    ])
    func malformedIDsAreRefused(_ text: String, error: SRTStreamID.Invalid) {
        #expect(throws: error) { try SRTStreamID(parsing: text) }
    }

    /// A refusal is logged: what the caller sent is shown on one line of printable ASCII
    /// (found by FuzzSRTInput: a path with a newline wrote a line of its own).
    @Test func refusalsQuoteTheCallerOnOneLine() throws {
        let error = try #require(throws: SRTStreamID.Invalid.self) { try SRTStreamID(parsing: "publish:li\nve/c\u{1B}[2Jam") }
        #expect(error.description == "'li?ve/c?[2Jam' is not app/name")
    }

    @Test func anIDOverSRTsBoundIsRefused() {
        let long = "publish:live/" + String(repeating: "a", count: 600)
        #expect(throws: SRTStreamID.Invalid.tooLong(long.utf8.count)) { try SRTStreamID(parsing: long) }
    }
}
