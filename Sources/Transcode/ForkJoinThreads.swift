import Dispatch

/// A fixed set of helper threads that run shares of one batch of work alongside the
/// calling thread and return when all shares are done: the pipeline encodes its rungs in
/// parallel with it, each rung on one thread at a time.
///
/// This is fork-join over dedicated threads (`WorkerThread`), not over Swift's cooperative
/// pool or Dispatch's shared queues: x264 encodes are long, CPU-bound calls that would
/// starve every other task of the process there.
///
/// `@unchecked Sendable`: a helper's `work` slot is written by the calling thread before it
/// signals the helper's `start` semaphore, and read by the helper after waiting on it; the
/// helper's `done` signal orders its writes before the caller continues. The semaphores
/// are the synchronisation; nothing else is shared.
final class ForkJoinThreads: @unchecked Sendable {
    private final class Helper: @unchecked Sendable {
        let start = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        var work: (() -> Void)?
        var stopping = false
    }

    private let helpers: [Helper]
    private var stopped = false

    /// No helpers: every share runs on the caller.
    static var serial: ForkJoinThreads { ForkJoinThreads() }

    private init() {
        helpers = []
    }

    /// Starts `helperCount` threads (0 runs everything on the caller).
    init(helperCount: Int) throws {
        var helpers: [Helper] = []
        for _ in 0..<max(0, helperCount) {
            let helper = Helper()
            try WorkerThread.start(name: "transcode-rung") {
                while true {
                    helper.start.wait()
                    if helper.stopping {
                        helper.done.signal()
                        return
                    }
                    helper.work?()
                    helper.work = nil
                    helper.done.signal()
                }
            }
            helpers.append(helper)
        }
        self.helpers = helpers
    }

    deinit {
        stop()
    }

    /// The number of shares `perform` runs at once: the caller plus the helpers.
    var width: Int { helpers.count + 1 }

    /// Runs `shares[0]` on the calling thread and each other share on a helper, and
    /// returns when all have finished. Shares beyond `width` run on the caller afterwards.
    func perform(_ shares: [() -> Void]) {
        guard !stopped, shares.count > 1, !helpers.isEmpty else {
            shares.forEach { $0() }
            return
        }
        let forked = min(shares.count - 1, helpers.count)
        for index in 0..<forked {
            helpers[index].work = shares[index + 1]
            helpers[index].start.signal()
        }
        shares[0]()
        for share in shares.dropFirst(forked + 1) {
            share()
        }
        for index in 0..<forked {
            helpers[index].done.wait()
        }
    }

    /// Ends the helper threads (idempotent). Called from the owning thread only.
    func stop() {
        guard !stopped else { return }
        stopped = true
        for helper in helpers {
            helper.stopping = true
            helper.start.signal()
            helper.done.wait()
        }
    }
}
