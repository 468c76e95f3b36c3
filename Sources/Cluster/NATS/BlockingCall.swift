import Foundation

/// Runs blocking libnats calls (connect, flush, close) on a thread of their own, off
/// Swift's cooperative pool: that pool has one thread per core (two here), and one
/// blocked in a connect timeout would stall every task of the process.
///
/// A thread per call: these calls are rare (start, shutdown, tests), and a fresh thread
/// cannot be stuck behind another blocked call.
enum BlockingCall {
    static func run<Result: Sendable>(_ name: String, _ body: @escaping @Sendable () -> Result) async -> Result {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                continuation.resume(returning: body())
            }
            thread.name = name
            thread.start()
        }
    }
}
