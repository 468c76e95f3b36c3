/// The `level` of an `onStatus` or `_result`/`_error` info object.
public enum StatusLevel: String, Sendable, Equatable {
    /// Success or progress.
    case status
    /// Something the client should know, not fatal.
    case warning
    /// Failure.
    case error
}
