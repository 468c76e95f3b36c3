import Cluster
import Foundation
import Testing

@testable import Coordinator

/// Stream keys: returned once, stored hashed, verified and revoked.
struct StreamKeyTests {
    @Test func theKeyIsNowhereInTheFile() async throws {
        let fixture = try await CoordinatorFixture()
        let created = try await fixture.state.createStreamKey(app: "live", name: "secret-show")
        #expect(created.key.utf8.count == 43)
        let bytes = try fixture.fileBytes()
        // The check reads the right bytes: the stream's name is there…
        #expect(bytes.range(of: Data("secret-show".utf8)) != nil)
        // …and the key is not, in the database, its WAL or shared memory.
        #expect(bytes.range(of: Data(created.key.utf8)) == nil)
        try await fixture.close()
        #expect(try fixture.fileBytes().range(of: Data(created.key.utf8)) == nil)
    }

    @Test func keysVerifyForTheirStreamOnlyUntilRevoked() async throws {
        let fixture = try await CoordinatorFixture()
        let first = try await fixture.state.createStreamKey(app: "live", name: "cam")
        let second = try await fixture.state.createStreamKey(app: "live", name: "cam")
        #expect(first.key != second.key)
        #expect(try await fixture.state.verifyStreamKey(app: "live", name: "cam", key: first.key))
        #expect(try await fixture.state.verifyStreamKey(app: "live", name: "cam", key: second.key))
        #expect(try await !fixture.state.verifyStreamKey(app: "live", name: "other", key: first.key))
        #expect(try await !fixture.state.verifyStreamKey(app: "live", name: "cam", key: String(first.key.dropLast())))
        #expect(try await !fixture.state.verifyStreamKey(app: "live", name: "cam", key: ""))

        #expect(try await fixture.state.revokeStreamKey(id: first.id))
        #expect(try await !fixture.state.verifyStreamKey(app: "live", name: "cam", key: first.key))
        #expect(try await fixture.state.verifyStreamKey(app: "live", name: "cam", key: second.key))
        #expect(try await !fixture.state.revokeStreamKey(id: 9999))

        let listed = try await fixture.state.streamKeys()
        #expect(listed.map(\.id) == [first.id, second.id])
        #expect(listed[0].revokedAt != nil && listed[1].revokedAt == nil)
        let kinds = try await fixture.state.events().map(\.kind)
        #expect(kinds.contains("key.created") && kinds.contains("key.revoked") && kinds.contains("key.refused"))
        try await fixture.close()
    }

    @Test func constantTimeComparisonStillCompares() {
        #expect(ConstantTime.equals(Data([1, 2, 3]), Data([1, 2, 3])))
        #expect(!ConstantTime.equals(Data([1, 2, 3]), Data([1, 2, 4])))
        #expect(!ConstantTime.equals(Data([1, 2, 3]), Data([1, 2])))
        #expect(ConstantTime.equalSecrets("token", "token"))
        #expect(!ConstantTime.equalSecrets("token", "token2"))
    }
}
