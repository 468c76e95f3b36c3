import NIOCore

/// Deadlines from seconds on an arbitrary uptime origin, for readable tests.
enum NIODeadlineSeconds {
    static func at(_ seconds: Double) -> NIODeadline {
        .uptimeNanoseconds(UInt64(seconds * 1_000_000_000))
    }
}
