import CNats
import NIOConcurrencyHelpers

/// Owns the `natsConnection`; destroys it when the last reference goes.
///
/// `@unchecked Sendable` because it wraps a C pointer: cnats makes a connection safe to use
/// from any thread (every `natsConnection_*` call takes the connection's own mutex), this
/// class never mutates the pointer, and `natsConnection_Destroy` runs exactly once, in
/// `deinit`, when no other Swift reference can use it.
final class NATSConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        // Closes first if still open (joins cnats's socket threads: quick once closed,
        // which `NATSBus.close()` and `NATSBus.deinit` arrange off the cooperative pool).
        natsConnection_Destroy(pointer)
    }
}

/// Owns one `natsSubscription`; unsubscribes and destroys it once, on `close()` or in
/// `deinit`.
///
/// `@unchecked Sendable` because it wraps a C pointer: cnats locks each subscription
/// internally, and the pointer itself is read and cleared only under `lock`, so it cannot
/// be destroyed while another thread reads its counters.
final class NATSSubscriptionHandle: @unchecked Sendable {
    private let lock = NIOLock()
    private var pointer: OpaquePointer?

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// Messages cnats dropped because the handler fell behind (slow consumer).
    var droppedMessages: UInt64 {
        lock.withLock {
            guard let pointer else { return 0 }
            return Self.dropped(pointer)
        }
    }

    /// Unsubscribes and frees the subscription; returns its final dropped count.
    /// The callback context is released by cnats's on-complete callback, after the last
    /// handler invocation has returned.
    @discardableResult
    func close() -> UInt64 {
        lock.withLock {
            guard let pointer else { return 0 }
            self.pointer = nil
            let dropped = Self.dropped(pointer)
            // Fails harmlessly (NATS_CONNECTION_CLOSED) when the connection is gone.
            _ = natsSubscription_Unsubscribe(pointer)
            natsSubscription_Destroy(pointer)
            return dropped
        }
    }

    deinit {
        close()
    }

    private static func dropped(_ pointer: OpaquePointer) -> UInt64 {
        var count: Int64 = 0
        guard natsSubscription_GetDropped(pointer, &count) == NATS_OK else { return 0 }
        return UInt64(max(0, count))
    }
}
