import Foundation

/// A dedicated thread that runs submitted jobs one after another, in submission order,
/// from a queue bounded in jobs: each rung of a pipeline has one, so that the rungs encode
/// in parallel with each other and with the decoder, and each rung's frames stay in order.
///
/// `submit` blocks while the queue is full. That is the backpressure that keeps decoded
/// pictures from piling up: the pipeline thread waits for its slowest rung, its own input
/// queue fills, and the lag policy of `TranscodeInbox` decides what to drop.
///
/// This is a plain thread (`WorkerThread`), not a task or a Dispatch queue: x264 encodes
/// are long CPU-bound calls that must not occupy Swift's cooperative pool.
///
/// `@unchecked Sendable`: the queue and flags are only touched with `condition` locked;
/// jobs are closures over one rung's non-Sendable libav owners, handed from the pipeline
/// thread to this thread through the locked queue (a happens-before edge) and from then on
/// used by this thread alone until `sync` or `stop` returns.
final class SerialWorker: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [() -> Void] = []
    private var running = false
    private var stopping = false
    private var stopped = false
    private let capacity: Int

    /// Starts the thread. `capacity` is the number of queued jobs at which `submit` blocks.
    init(name: String, capacity: Int) throws {
        self.capacity = max(1, capacity)
        try WorkerThread.start(name: name) { [self] in
            runLoop()
        }
    }

    /// Queues `job`; blocks while `capacity` jobs are waiting. Jobs submitted after `stop`
    /// are dropped.
    func submit(_ job: @escaping () -> Void) {
        condition.lock()
        defer { condition.unlock() }
        while queue.count >= capacity && !stopping {
            condition.wait()
        }
        guard !stopping else { return }
        queue.append(job)
        condition.broadcast()
    }

    /// Queues `job` and returns once it (and everything queued before it) has run.
    func sync(_ job: @escaping () -> Void) {
        let done = DispatchSemaphore(value: 0)
        var submitted = false
        condition.lock()
        if !stopping {
            while queue.count >= capacity && !stopping {
                condition.wait()
            }
            if !stopping {
                queue.append {
                    job()
                    done.signal()
                }
                submitted = true
                condition.broadcast()
            }
        }
        condition.unlock()
        if submitted {
            done.wait()
        }
    }

    /// Runs what is queued, then ends the thread; returns when it has ended. Idempotent.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !stopped {
            condition.wait()
        }
        condition.unlock()
    }

    private func runLoop() {
        condition.lock()
        while true {
            while queue.isEmpty && !stopping {
                condition.wait()
            }
            if queue.isEmpty && stopping {
                stopped = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let batch = queue
            queue.removeAll(keepingCapacity: true)
            condition.broadcast()
            condition.unlock()
            for job in batch {
                job()
            }
            condition.lock()
        }
    }
}
