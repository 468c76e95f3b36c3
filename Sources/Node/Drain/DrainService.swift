import Logging
import ServiceLifecycle
import UnixSignals

/// Runs the node's drain (`NodeDrain`) when it is asked for, then ends, which shuts the
/// node's service group down gracefully (streams end cleanly, listeners close).
///
/// With a grace period configured, SIGTERM drains instead of stopping at once (a second
/// SIGTERM stops waiting); SIGINT, and SIGTERM with a grace of 0, stop at once.
struct DrainService: Service {
    let drain: NodeDrain
    /// The drain SIGTERM starts; nil leaves SIGTERM to the service group.
    let onSigterm: NodeDrain.Request?
    let logger: Logger

    func run() async throws {
        let drain = drain
        await withTaskGroup(of: Void.self) { group in
            if let onSigterm {
                group.addTask {
                    for await _ in await UnixSignalsSequence(trapping: .sigterm) {
                        if !drain.begin(onSigterm) { drain.hurry() }
                    }
                }
            }
            // The first drain requested; nil when the node shuts down for another reason.
            let request = await cancelWhenGracefulShutdown {
                var requests = drain.requested.makeAsyncIterator()
                return await requests.next()
            }
            if let request {
                for participant in drain.participants {
                    group.addTask { await participant.begin(request.grace) }
                }
                await cancelWhenGracefulShutdown {
                    drain.askPublishersToMove()
                    // Polled: sessions leave on many threads, and a tenth of a second is
                    // nothing against a grace period.
                    while !Task.isCancelled {
                        let pending = await drain.pending()
                        if drain.isDone(pending: pending) { break }
                        try? await Task.sleep(for: .milliseconds(100))
                    }
                }
                let status = drain.status()
                let workLeft = await drain.pending()
                logger.notice("drain over: shutting down", metadata: [
                    "publishersLeft": "\(status.publishers)", "viewersLeft": "\(status.viewers)", "workLeft": "\(workLeft)",
                    "after": "\(status.elapsedSeconds ?? 0) s",
                ])
            }
            group.cancelAll()
        }
    }
}
