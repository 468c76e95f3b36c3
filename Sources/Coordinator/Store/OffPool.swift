import Foundation

/// Runs a blocking call (opening or closing the database file) on a thread of its own, off
/// Swift's cooperative pool: that pool has one thread per core (two here), and a blocked
/// one stalls every task of the process. These calls are rare (start, shutdown), so a
/// thread per call is cheap enough.
enum OffPool {
    static func run<Value: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Result<Value, any Error> { try body() })
            }
            thread.name = name
            thread.start()
        }
    }
}
