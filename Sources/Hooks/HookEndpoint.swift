/// One webhook of an application: where it is sent, how long one attempt may take, and how
/// many times a failed attempt (no answer, or a 5xx) is tried again.
public struct HookEndpoint: Sendable, Equatable {
    /// `http://` or `https://`.
    public var url: String
    /// One attempt's limit, from the request to the answer's status (2 s by default).
    public var timeout: Duration
    /// Attempts after the first (1 by default), 100 ms × attempt apart.
    public var retries: Int

    public static let defaultTimeout: Duration = .seconds(2)
    public static let defaultRetries = 1

    public init(url: String, timeout: Duration = HookEndpoint.defaultTimeout, retries: Int = HookEndpoint.defaultRetries) {
        self.url = url
        self.timeout = timeout
        self.retries = retries
    }

    /// The longest a call may take: every attempt at its timeout, and the pauses between.
    public var worstCase: Duration {
        timeout * (retries + 1) + .milliseconds(100 * retries * (retries + 1) / 2)
    }
}
