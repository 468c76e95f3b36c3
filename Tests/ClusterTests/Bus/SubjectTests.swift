import Testing

@testable import Cluster

@Suite struct SubjectTests {
    @Test(arguments: [
        ("media.live.cam1.src", "media.live.cam1.src", true),
        ("media.*.cam1.src", "media.live.cam1.src", true),
        ("media.>", "media.live.cam1.src", true),
        ("media.>", "media", false),
        ("media.*", "media.live.cam1", false),
        ("media.live.*.*", "media.live.cam1.src", true),
        ("media.live.cam1", "media.live.cam1.src", false),
        ("*.live.>", "media.live.cam1.src", true),
    ])
    func filterMatchesSubject(filter: String, subject: String, expected: Bool) {
        #expect(Subject.matches(filter: filter, subject: subject) == expected)
    }

    @Test(arguments: ["", ".a", "a.", "a..b", "a b", "a.>.b", "a*.b", "a\tb"])
    func invalidSubjectsAreRefused(subject: String) {
        #expect(Subject.filterTokens(subject) == nil)
        #expect(!Subject.isValidPublish(subject))
    }

    @Test(arguments: ["a", "a.b.c", "media.live.cam%2E1.src", "a*", ">b", "a.*", "a.>", "a..b", ".", "a.", " a", "a\u{7F}", "ünïcode.ok"])
    func fastPublishCheckAgreesWithTheTokenizer(subject: String) {
        #expect(Subject.isValidPublish(subject) == (Subject.publishTokens(subject) != nil))
    }

    @Test func wildcardsAreRefusedInPublishedSubjects() {
        #expect(!Subject.isValidPublish("media.*.x"))
        #expect(!Subject.isValidPublish("media.>"))
        #expect(Subject.filterTokens("media.*.x") != nil)
    }
}
