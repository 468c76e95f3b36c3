/// How `NATSBus` connects: servers, authentication, TLS, reconnection and buffering.
/// A Sendable value, built from the node's configuration.
public struct NATSBusConfiguration: Sendable {
    /// TLS settings. Setting any turns TLS on (`natsOptions_SetSecure`); a `tls://` URL
    /// does too.
    public struct TLS: Sendable, Equatable {
        /// PEM file of the CA(s) that sign the server's certificate; the system's
        /// defaults when nil.
        public var caFile: String?
        /// Client certificate chain and key (PEM), for servers that verify clients.
        public var certificateFile: String?
        public var keyFile: String?
        /// The name expected in the server's certificate, when it differs from the URL host.
        public var expectedHostname: String?

        public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil, expectedHostname: String? = nil) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.keyFile = keyFile
            self.expectedHostname = expectedHostname
        }
    }

    /// Server URLs (`nats://host:4222`, `tls://…`, optionally `nats://user:pass@host`).
    public var servers: [String]
    /// The server URLs for logs: a user part (`nats://TOKEN@host`, `nats://user:pass@host`)
    /// becomes `<credentials>`, so secrets never reach a log line or `--check-config`.
    public var redactedServers: String {
        servers.map { url in
            guard let scheme = url.firstRange(of: "://"), let at = url[scheme.upperBound...].lastIndex(of: "@") else { return url }
            return url[..<scheme.upperBound] + "<credentials>" + url[at...]
        }.joined(separator: ",")
    }
    /// The connection's name in the server's monitoring (`/connz`): the node id.
    public var name: String?
    public var user: String?
    public var password: String?
    public var token: String?
    /// A `.creds` file (user JWT and NKey seed), as `nsc` writes it.
    public var credentialsFile: String?
    public var tls: TLS?
    /// Bound on one connection attempt. Default 2 s (cnats's own default).
    public var connectTimeout: Duration = .seconds(2)
    /// Pause between reconnection attempts to the same server. Default 250 ms rather than
    /// cnats's 2 s: after a NATS restart media must flow again within 2 s (issue 5), and a
    /// retry costs a loopback or LAN connect.
    public var reconnectWait: Duration = .milliseconds(250)
    /// Bytes of publishes kept while disconnected and sent after reconnecting; beyond it
    /// publishes fail (and media frames become gaps). Default 8 MiB, cnats's default: a few
    /// seconds of a few ladders' worth of video.
    public var reconnectBufferBytes: Int = 8 << 20
    /// When no server answers at start: true keeps trying in the background (the bus
    /// works once one does), false makes `connect` throw.
    public var retryOnFailedConnect = false
    /// Messages and bytes a subscription may have waiting for its handler before cnats
    /// drops (slow consumer). Defaults are cnats's: 65536 messages, 64 MiB.
    public var maxPendingMessagesPerSubscription = 65_536
    public var maxPendingBytesPerSubscription = 64 << 20
    /// The payload limit assumed until the server has announced its own (only matters
    /// with `retryOnFailedConnect`). nats-server's default is 1 MiB.
    public var fallbackMaxPayload = 1 << 20
    /// How long one socket write may take before cnats gives up on the connection and
    /// reconnects (natsOptions_SetWriteDeadline). With `sendAsap` a publish writes on the
    /// caller's thread, often an event loop: this bounds how long a stuck server can block
    /// it. nil keeps cnats's blocking socket. Default 2 s: far above a healthy write,
    /// short enough that one stuck link does not freeze a publisher for long.
    public var writeDeadline: Duration? = .seconds(2)
    /// Write every publish to the socket at once instead of batching in cnats's flusher
    /// thread: lower latency for requests and media (natsOptions_SetSendAsap).
    public var sendAsap = true

    public init(servers: [String]) {
        self.servers = servers
    }
}
