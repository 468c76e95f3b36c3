import Logging
import Metrics
import Synchronization

/// Sends the end hooks (`on_unpublish`, `on_stop`), fire-and-forget: a session's end never
/// waits for its hook. They wait in a queue of at most `capacity` (1024), sent by one Task
/// at most `concurrency` (4) at a time; beyond the capacity a hook is dropped, counted in
/// `estuary_hook_dropped_total` and logged (once a minute at most).
public final class HookNotifier: Sendable {
    struct Job: Sendable {
        var endpoint: HookEndpoint
        var event: HookEvent
    }

    private let continuation: AsyncStream<Job>.Continuation
    private let task: Task<Void, Never>
    private let logger: Logger
    private let lastDropLog = Mutex<ContinuousClock.Instant?>(nil)
    private let drops = Atomic<Int>(0)

    /// End hooks dropped so far because the queue was full.
    public var dropped: Int { drops.load(ordering: .relaxed) }

    public init(caller: HookCaller, capacity: Int = 1024, concurrency: Int = 4, logger: Logger) {
        let (stream, continuation) = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .bufferingOldest(max(1, capacity)))
        self.continuation = continuation
        self.logger = logger
        let concurrency = max(1, concurrency)
        task = Task {
            await withTaskGroup(of: Void.self) { group in
                var running = 0
                for await job in stream {
                    if running >= concurrency {
                        await group.next()
                        running -= 1
                    }
                    running += 1
                    group.addTask {
                        let answer = await caller.call(job.endpoint, job.event)
                        if case .failed(let why) = answer {
                            logger.warning("\(job.event.action.rawValue) hook failed", metadata: ["session": "\(job.event.sessionId)", "reason": "\(why)"])
                        }
                    }
                }
            }
        }
    }

    deinit {
        continuation.finish()
    }

    public func notify(_ endpoint: HookEndpoint, _ event: HookEvent) {
        guard case .dropped = continuation.yield(Job(endpoint: endpoint, event: event)) else { return }
        HookMetrics.dropped(event.action).increment()
        drops.add(1, ordering: .relaxed)
        let now = ContinuousClock.now
        let shouldLog = lastDropLog.withLock { last in
            guard last.map({ now - $0 >= .seconds(60) }) ?? true else { return false }
            last = now
            return true
        }
        if shouldLog {
            logger.warning("dropping end hooks: the queue is full (the hook server is slow or down)", metadata: ["action": "\(event.action.rawValue)"])
        }
    }

    /// Stops sending (shutdown): hooks still queued are not sent.
    public func stop() {
        continuation.finish()
        task.cancel()
    }
}
