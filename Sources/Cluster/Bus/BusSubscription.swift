import NIOConcurrencyHelpers

/// An active subscription. Cancelling it (or releasing the last reference to it) stops
/// deliveries; a handler invocation already running on another thread may still finish
/// after `cancel()` returns.
public final class BusSubscription: Sendable {
    /// The subject the subscription was made with (possibly with wildcards).
    public let subject: String
    private let cancelAction: NIOLockedValueBox<(@Sendable () -> Void)?>

    /// - Parameter cancel: removes the subscription from its bus; called at most once.
    public init(subject: String, cancel: @escaping @Sendable () -> Void) {
        self.subject = subject
        self.cancelAction = NIOLockedValueBox(cancel)
    }

    /// Stops deliveries. Idempotent.
    public func cancel() {
        let action = cancelAction.withLockedValue { action in
            defer { action = nil }
            return action
        }
        action?()
    }

    public var isCancelled: Bool {
        cancelAction.withLockedValue { $0 == nil }
    }

    deinit {
        // Releasing a subscription unsubscribes, so a forgotten handle cannot keep a
        // relay subscribed to a stream with no viewers.
        cancel()
    }
}
