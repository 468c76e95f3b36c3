import Cluster
import Foundation
import TestSupport

@testable import Coordinator

/// A coordinator on a real SQLite file in a temporary directory, with a manual clock.
/// Reopening loads the same file, as a restarted coordinator would.
final class CoordinatorFixture {
    let directory: TemporaryDirectory
    let clock: ManualClock
    let configuration: CoordinatorConfiguration
    private(set) var store: CoordinatorStore
    private(set) var state: CoordinatorState

    static let ladder = [
        RungSpec(name: "720p", width: 1280, height: 720, bitRate: 2_500_000),
        RungSpec(name: "480p", width: 854, height: 480, bitRate: 1_000_000),
    ]

    init(configuration: CoordinatorConfiguration = CoordinatorConfiguration(ladders: ["live": CoordinatorFixture.ladder])) async throws {
        directory = try TemporaryDirectory(prefix: "estuary-coordinator-tests")
        clock = ManualClock()
        self.configuration = configuration
        store = try await CoordinatorStore.open(at: directory.file("coordinator.sqlite").path)
        state = try await CoordinatorState.load(store: store, configuration: configuration, now: clock.function)
    }

    var path: String { store.path }

    /// Closes the store and loads a new state from the same file.
    func reopen() async throws {
        try await store.close()
        store = try await CoordinatorStore.open(at: path)
        state = try await CoordinatorState.load(store: store, configuration: configuration, now: clock.function)
    }

    /// Every byte of the database, its WAL and shared-memory files.
    func fileBytes() throws -> Data {
        var bytes = Data()
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            bytes.append(try Data(contentsOf: URL(fileURLWithPath: path + suffix)))
        }
        return bytes
    }

    func close() async throws {
        try await store.close()
    }

    @discardableResult
    func register(_ nodeID: String, _ role: NodeRole, streams: [StreamReport] = []) async throws -> HeartbeatReply {
        try await state.register(NodeRegistration(nodeID: nodeID, role: role, advertiseHost: "\(nodeID).local", streams: streams))
    }
}

extension StreamFacts {
    static let sample = StreamFacts(
        container: "flv", videoCodec: "h264", videoProfile: "High", width: 1920, height: 1080, frameRate: 29.97,
        videoBitRate: 4_500_000, audioCodec: "aac", audioBitRate: 128_000, audioSampleRate: 44_100, audioChannels: 2
    )
}
