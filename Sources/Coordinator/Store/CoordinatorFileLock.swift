#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// The coordinator's claim on its SQLite file: an exclusive `flock` on `<file>.lock`, held
/// while the store is open and released by `release()` or when the process dies (even by
/// `kill -9`, so a restart never finds a stale lock).
///
/// WAL lets two processes open the same file, and two coordinators on one file would each
/// take the other's nodes for its own and place jobs on nodes it cannot reach (a rolling
/// restart, one volume mounted twice). The second one must stop at once, saying why.
final class CoordinatorFileLock: Sendable {
    let path: String
    /// nil once released: closing twice could close a descriptor the process reused.
    private let descriptor: Mutex<Int32?>

    /// - Throws: `CoordinatorStoreError.inUse` when another process holds the lock,
    ///   `.cannotOpen` when the lock file cannot be created.
    init(databasePath: String) throws(CoordinatorStoreError) {
        path = databasePath + ".lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .cannotOpen(path: databasePath, reason: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno == EWOULDBLOCK ? nil : String(cString: strerror(errno))
            close(descriptor)
            if let reason {
                throw .cannotOpen(path: databasePath, reason: "cannot lock \(path): \(reason)")
            }
            throw .inUse(path: databasePath)
        }
        self.descriptor = Mutex(descriptor)
    }

    /// Gives the file up (closing the descriptor drops the lock). Idempotent.
    func release() {
        if let descriptor = descriptor.withLock({ value -> Int32? in defer { value = nil }; return value }) {
            close(descriptor)
        }
    }
}

/// Why the coordinator's store could not be opened.
public enum CoordinatorStoreError: Error, CustomStringConvertible, Equatable {
    /// Another coordinator process has the file open.
    case inUse(path: String)
    /// The file (or its lock file) cannot be created, read or migrated.
    case cannotOpen(path: String, reason: String)

    public var description: String {
        switch self {
        case .inUse(let path):
            "the coordinator database \(path) is in use by another process (another node on the same data directory?); give each coordinator its own file with --database or --data-dir"
        case .cannotOpen(let path, let reason):
            "cannot open the coordinator database \(path): \(reason) (choose another file with --database or --data-dir)"
        }
    }
}
