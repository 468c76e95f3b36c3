import NIOConcurrencyHelpers

/// A setting a running node may be given anew (a configuration reload), read where it is
/// used: each read sees the latest value, and what was built from an older one keeps it
/// (a connection keeps the limits it was accepted with).
public final class Reloadable<Value: Sendable>: Sendable {
    private let box: NIOLockedValueBox<Value>

    public init(_ value: Value) {
        box = NIOLockedValueBox(value)
    }

    public var value: Value { box.withLockedValue { $0 } }

    public func set(_ value: Value) {
        box.withLockedValue { $0 = value }
    }
}
