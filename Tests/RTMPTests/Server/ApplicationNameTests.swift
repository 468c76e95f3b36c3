import Testing

@testable import RTMP

/// The application a `connect` may name: `app`, or `app/name` for a viewer of one of the
/// stream's rungs (`rtmp://host/app/name/rung`); each part follows the stream name rule.
struct ApplicationNameTests {
    @Test func oneOrTwoValidPartsAreAcceptedAndNothingElse() {
        for app in ["live", "abr", "abr/demo", "a.b/c-d_e"] {
            #expect(RTMPConnectionStateMachine<Void, Void>.isValidApplication(app), "\(app) was refused")
        }
        for app in ["", "/", "abr/", "/demo", "abr//demo", "abr/demo/480p", ".abr", "abr/.demo", "a b", "abr/dé", String(repeating: "a", count: 129)] {
            #expect(!RTMPConnectionStateMachine<Void, Void>.isValidApplication(app), "\(app) was accepted")
        }
    }
}
