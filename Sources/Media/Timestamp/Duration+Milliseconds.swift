extension Duration {
    /// Whole milliseconds, truncated: the unit of FLV timestamps and of the C libraries'
    /// timeouts (libnats, libsrt).
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
