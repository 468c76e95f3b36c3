import Foundation
import GRDB

/// The coordinator's SQLite file: a GRDB `DatabasePool` (WAL mode: readers never wait for
/// the writer) migrated by `CoordinatorMigrations`. The coordinator is its only writer.
///
/// Every access is `async` (`read` / `write` run on GRDB's own queues, never on Swift's
/// cooperative pool); opening and closing, which GRDB only offers synchronously, run on
/// a thread of their own.
public final class CoordinatorStore: Sendable {
    /// The file's path.
    public let path: String
    let pool: DatabasePool
    private let lock: CoordinatorFileLock

    private init(path: String, pool: DatabasePool, lock: CoordinatorFileLock) {
        self.path = path
        self.pool = pool
        self.lock = lock
    }

    /// Opens (creating if needed) the database at `path` and applies pending migrations,
    /// after claiming it (`CoordinatorFileLock`): a file another coordinator process has
    /// open is refused with `CoordinatorStoreError.inUse`, and any other failure is a
    /// `CoordinatorStoreError.cannotOpen` that names the file.
    public static func open(at path: String) async throws -> CoordinatorStore {
        let lock = try await OffPool.run("coordinator-lock") { try CoordinatorFileLock(databasePath: path) }
        do {
            let pool = try await OffPool.run("coordinator-open") {
                var configuration = Configuration()
                // A write waiting for the lock (a checkpoint, another process poking the
                // file) waits a little instead of failing at once.
                configuration.busyMode = .timeout(5)
                configuration.label = "estuary.coordinator"
                return try DatabasePool(path: path, configuration: configuration)
            }
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                CoordinatorMigrations.migrator.asyncMigrate(pool) { result in
                    switch result {
                    case .success: continuation.resume()
                    case .failure(let error): continuation.resume(throwing: error)
                    }
                }
            }
            return CoordinatorStore(path: path, pool: pool, lock: lock)
        } catch {
            lock.release()
            throw CoordinatorStoreError.cannotOpen(path: path, reason: "\(error)")
        }
    }

    /// Closes the file (checkpointing the WAL) and gives up the claim on it. The store must
    /// not be used afterwards.
    public func close() async throws {
        let pool = pool
        defer { lock.release() }
        try await OffPool.run("coordinator-close") { try pool.close() }
    }

    /// One write transaction, serialised with every other write.
    func write<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.write(updates)
    }

    /// One read, concurrent with writes (WAL snapshot isolation).
    func read<T: Sendable>(_ value: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await pool.read(value)
    }

    /// The names of the applied migrations, oldest first.
    public func appliedMigrations() async throws -> [String] {
        try await read { db in try CoordinatorMigrations.migrator.appliedMigrations(db) }
    }

    /// SQLite's `journal_mode` for the file (`wal`).
    public func journalMode() async throws -> String {
        try await read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }
}
