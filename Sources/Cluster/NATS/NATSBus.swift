import CNats
import Foundation
import Logging
import Media
import NIOConcurrencyHelpers
import NIOCore

/// The bus between nodes, over NATS with libnats (cnats).
///
/// - **Delivery.** cnats gives each subscription a delivery thread; handlers run on it,
///   synchronously and in order (see `Bus`). The payload is copied once out of cnats's
///   message into a `ByteBuffer`.
/// - **Requests** share one wildcard inbox subscription (`_INBOX.<random>.>`) and a map of
///   continuations (`RequestInbox`), as nats.go does: no thread waits for a reply.
/// - **Blocking calls** (connect, flush, close) run on threads of their own
///   (`BlockingCall`), never on Swift's cooperative pool. `publish` and `subscribe` do not
///   block: with `sendAsap` a publish is one socket write, and while disconnected it goes
///   to the reconnect buffer.
/// - **Outages.** cnats reconnects forever (`reconnectWait` between attempts), renews the
///   subscriptions, then sends what was buffered meanwhile (`reconnectBufferBytes`).
///   `onEvent` hears about it.
/// - **Lifetime.** `close()` closes the connection; every C object (connection, options,
///   subscriptions) is freed by its owner. A bus released without `close()` is closed on
///   a thread of its own.
public final class NATSBus: Bus {
    public let configuration: NATSBusConfiguration
    private let connection: NATSConnectionHandle
    private let inbox = RequestInbox()
    private let registry = NIOLockedValueBox(Registry())
    private let logger: Logger

    private struct Registry: Sendable {
        var nextID: UInt64 = 1
        var subscriptions: [UInt64: NATSSubscriptionHandle] = [:]
        var inboxSubscription: BusSubscription?
        /// Dropped counts of subscriptions already closed.
        var droppedByClosedSubscriptions: UInt64 = 0
        var publishFailures: UInt64 = 0
        var closed = false
    }

    private init(configuration: NATSBusConfiguration, connection: NATSConnectionHandle, logger: Logger) {
        self.configuration = configuration
        self.connection = connection
        self.logger = logger
    }

    /// Connects to one of `configuration.servers` (on a thread of its own; bounded by
    /// `connectTimeout` per server) and subscribes the request inbox.
    ///
    /// - Parameter onEvent: called on a cnats thread for every connection event; must not
    ///   block. cnats holds it (not the bus) until the connection is closed.
    public static func connect(
        configuration: NATSBusConfiguration,
        logger: Logger = Logger(label: "estuary.bus.nats"),
        onEvent: @escaping @Sendable (NATSBusEvent) -> Void = { _ in }
    ) async throws(BusError) -> NATSBus {
        let events = NATSEventContext(logger: logger, onEvent: onEvent)
        let result = await BlockingCall.run("nats-connect") { () -> Result<NATSConnectionHandle, BusError> in
            Result { () throws(BusError) in try openConnection(configuration: configuration, events: events) }
        }
        let bus = NATSBus(configuration: configuration, connection: try result.get(), logger: logger)
        let inbox = bus.inbox
        let context = NATSSubscriptionContext(subject: inbox.subscriptionSubject, inbox: inbox) { _ in }
        do {
            let subscription = try bus.subscribe(subject: inbox.subscriptionSubject, context: context)
            bus.registry.withLockedValue { $0.inboxSubscription = subscription }
        } catch {
            await bus.close()
            throw error
        }
        return bus
    }

    /// The server's `max_payload` (announced at connect), or `fallbackMaxPayload` before
    /// the first connection.
    public var maxPayload: Int {
        let announced = natsConnection_GetMaxPayload(connection.pointer)
        return announced > 0 ? Int(announced) : configuration.fallbackMaxPayload
    }

    /// True while connected to a server (false while reconnecting or after `close()`).
    public var isConnected: Bool {
        natsConnection_Status(connection.pointer) == NATS_CONN_STATUS_CONNECTED
    }

    public func publish(subject: String, payload: ByteBuffer) throws(BusError) {
        guard Subject.isValidPublish(subject) else {
            throw .invalidSubject(subject)
        }
        try checkSize(payload)
        let status = payload.withUnsafeReadableBytes { bytes in
            natsConnection_Publish(connection.pointer, subject, bytes.baseAddress, Int32(bytes.count))
        }
        try check(status, "natsConnection_Publish")
    }

    public func subscribe(subject: String, handler: @escaping @Sendable (BusMessage) -> Void) throws(BusError) -> BusSubscription {
        try subscribe(subject: subject, context: NATSSubscriptionContext(subject: subject, inbox: nil, handler: handler))
    }

    public func request(subject: String, payload: ByteBuffer, timeout: Duration) async throws(BusError) -> ByteBuffer {
        guard Subject.isValidPublish(subject) else {
            throw .invalidSubject(subject)
        }
        try checkSize(payload)
        let connection = connection
        return try await inbox.request(subject: subject, timeout: timeout) { (replySubject: String) throws(BusError) in
            let status = payload.withUnsafeReadableBytes { bytes in
                natsConnection_PublishRequest(connection.pointer, subject, replySubject, bytes.baseAddress, Int32(bytes.count))
            }
            try check(status, "natsConnection_PublishRequest")
        }
    }

    public var statistics: BusStatistics {
        var result = BusStatistics()
        var stats: OpaquePointer?
        if natsStatistics_Create(&stats) == NATS_OK, let stats {
            if natsConnection_GetStats(connection.pointer, stats) == NATS_OK {
                var reconnects: UInt64 = 0
                _ = natsStatistics_GetCounts(stats, &result.messagesIn, &result.bytesIn, &result.messagesOut, &result.bytesOut, &reconnects)
                result.reconnects = reconnects
            }
            natsStatistics_Destroy(stats)
        }
        registry.withLockedValue { registry in
            result.droppedOutgoing = registry.publishFailures
            result.droppedIncoming = registry.subscriptions.values.reduce(registry.droppedByClosedSubscriptions) { $0 + $1.droppedMessages }
        }
        return result
    }

    /// Waits until the server has processed everything sent so far (a PING/PONG round
    /// trip), on a thread of its own. Tests use it to know a subscription is in place.
    public func flush(timeout: Duration = .seconds(5)) async throws(BusError) {
        let connection = connection
        let milliseconds = Self.milliseconds(timeout)
        let status = await BlockingCall.run("nats-flush") {
            natsConnection_FlushTimeout(connection.pointer, milliseconds).rawValue
        }
        try check(natsStatus(rawValue: status), "natsConnection_FlushTimeout")
    }

    /// Fails pending requests, closes every subscription and the connection (on a thread of
    /// its own). Later calls throw `BusError.closed`. Idempotent.
    public func close() async {
        // Taken out under the lock and released after it: a BusSubscription's cancel
        // (run when it is released) takes the registry lock itself.
        let (subscriptions, inboxSubscription) = registry.withLockedValue { registry in
            registry.closed = true
            defer {
                registry.subscriptions.removeAll()
                registry.inboxSubscription = nil
            }
            return (Array(registry.subscriptions.values), registry.inboxSubscription)
        }
        inbox.close()
        inboxSubscription?.cancel()
        for subscription in subscriptions {
            subscription.close()
        }
        let connection = connection
        await BlockingCall.run("nats-close") {
            natsConnection_Close(connection.pointer)
        }
    }

    deinit {
        inbox.close()
        guard !registry.withLockedValue({ $0.closed }) else { return }
        // natsConnection_Close joins cnats's socket threads: keep that off whatever thread
        // released the bus (possibly the cooperative pool). The handle, and with it
        // natsConnection_Destroy, goes with the thread.
        let connection = connection
        let thread = Thread {
            natsConnection_Close(connection.pointer)
        }
        thread.name = "nats-close"
        thread.start()
    }

    // MARK: - Internals

    private func subscribe(subject: String, context: NATSSubscriptionContext) throws(BusError) -> BusSubscription {
        guard Subject.filterTokens(subject) != nil else {
            throw .invalidSubject(subject)
        }
        guard !registry.withLockedValue({ $0.closed }) else {
            throw .closed
        }
        let closure = Unmanaged.passRetained(context).toOpaque()
        var pointer: OpaquePointer?
        let status = natsConnection_Subscribe(&pointer, connection.pointer, subject, natsMessageReceived, closure)
        guard status == NATS_OK, let pointer else {
            // No subscription exists, so cnats will never call back with the closure.
            Unmanaged<NATSSubscriptionContext>.fromOpaque(closure).release()
            throw Self.error(status == NATS_OK ? NATS_ERR : status, "natsConnection_Subscribe")
        }
        if natsSubscription_SetOnCompleteCB(pointer, natsSubscriptionCompleted, closure) != NATS_OK {
            // Only a subscription closed in the meantime refuses; cnats may still call the
            // handler, so the context is leaked rather than freed under it.
            logger.warning("natsSubscription_SetOnCompleteCB failed; a subscription context is leaked", metadata: ["subject": "\(subject)"])
        }
        _ = natsSubscription_SetPendingLimits(
            pointer,
            Int32(clamping: configuration.maxPendingMessagesPerSubscription),
            Int32(clamping: configuration.maxPendingBytesPerSubscription)
        )
        let handle = NATSSubscriptionHandle(pointer)
        let id = registry.withLockedValue { registry in
            defer { registry.nextID += 1 }
            registry.subscriptions[registry.nextID] = handle
            return registry.nextID
        }
        return BusSubscription(subject: subject) { [weak self] in
            let dropped = handle.close()
            self?.registry.withLockedValue { registry in
                registry.subscriptions[id] = nil
                registry.droppedByClosedSubscriptions += dropped
            }
        }
    }

    private func checkSize(_ payload: ByteBuffer) throws(BusError) {
        let limit = maxPayload
        guard payload.readableBytes <= limit else {
            registry.withLockedValue { $0.publishFailures += 1 }
            throw .payloadTooLarge(size: payload.readableBytes, limit: limit)
        }
    }

    private func check(_ status: natsStatus, _ operation: String) throws(BusError) {
        guard status == NATS_OK else {
            registry.withLockedValue { $0.publishFailures += 1 }
            throw Self.error(status, operation)
        }
    }

    private static func error(_ status: natsStatus, _ operation: String, detail: String? = nil) -> BusError {
        status == NATS_CONNECTION_CLOSED ? .closed : .nats(NATSError(operation, status, detail: detail))
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        max(1, duration.milliseconds)
    }

    /// Builds the options and connects; runs on a `BlockingCall` thread.
    private static func openConnection(configuration: NATSBusConfiguration, events: NATSEventContext) throws(BusError) -> NATSConnectionHandle {
        var options: OpaquePointer?
        try natsOptions_Create(&options).check("natsOptions_Create")
        guard let options else {
            throw .nats(NATSError("natsOptions_Create", NATS_NO_MEMORY))
        }
        // The connection keeps a copy of the options, so ours go right after connecting.
        defer { natsOptions_Destroy(options) }
        let closure = Unmanaged.passRetained(events).toOpaque()
        do {
            try configure(options, configuration, closure: closure)
        } catch {
            Unmanaged<NATSEventContext>.fromOpaque(closure).release()
            throw error
        }
        var connection: OpaquePointer?
        var status = natsConnection_Connect(&connection, options)
        if status == NATS_CONNECTION_AUTH_FAILED, configuration.credentialsFile != nil {
            // cnats before 3.8.0 (Debian 12 has 3.4.1) drops `sig` from CONNECT when the
            // nonce's signature starts with a zero byte (nats.c #705), about one connect in
            // 256, and the server answers Authorization Violation. The server picks a new
            // nonce per connection, so one more try makes that 1 in 65,536; credentials that
            // are really refused are refused again within milliseconds.
            events.logger.debug("NATS refused the credentials; trying once more (cnats nonce-signature bug)")
            connection = nil
            status = natsConnection_Connect(&connection, options)
        }
        let pending = status == NATS_NOT_YET_CONNECTED && configuration.retryOnFailedConnect
        guard status == NATS_OK || pending, let connection else {
            // cnats freed the never-connected connection without posting callbacks.
            Unmanaged<NATSEventContext>.fromOpaque(closure).release()
            // The detail (e.g. the server's -ERR text) is thread-local to this thread.
            let detail = nats_GetLastError(nil).map { String(cString: $0) }
            if let detail {
                events.logger.error("NATS connect failed", metadata: ["error": "\(detail)"])
            }
            throw error(status == NATS_OK ? NATS_ERR : status, "natsConnection_Connect", detail: detail.map(withoutSourceLocation))
        }
        return NATSConnectionHandle(connection)
    }

    /// cnats's last-error text without its `(file.c:123): ` prefix.
    private static func withoutSourceLocation(_ text: String) -> String {
        guard text.hasPrefix("("), let end = text.range(of: "): ") else { return text }
        return String(text[end.upperBound...])
    }

    private static func configure(_ options: OpaquePointer, _ configuration: NATSBusConfiguration, closure: UnsafeMutableRawPointer) throws(BusError) {
        guard !configuration.servers.isEmpty else {
            throw .nats(NATSError("natsOptions_SetServers (no servers configured)", NATS_INVALID_ARG))
        }
        try withCStrings(configuration.servers) { (servers, count) throws(BusError) in
            try natsOptions_SetServers(options, servers, count).check("natsOptions_SetServers")
        }
        if let name = configuration.name {
            try natsOptions_SetName(options, name).check("natsOptions_SetName")
        }
        if configuration.user != nil || configuration.password != nil {
            try natsOptions_SetUserInfo(options, configuration.user, configuration.password).check("natsOptions_SetUserInfo")
        }
        if let token = configuration.token {
            try natsOptions_SetToken(options, token).check("natsOptions_SetToken")
        }
        if let credentialsFile = configuration.credentialsFile {
            try natsOptions_SetUserCredentialsFromFiles(options, credentialsFile, nil).check("natsOptions_SetUserCredentialsFromFiles")
        }
        if let tls = configuration.tls {
            try natsOptions_SetSecure(options, true).check("natsOptions_SetSecure")
            if let caFile = tls.caFile {
                try natsOptions_LoadCATrustedCertificates(options, caFile).check("natsOptions_LoadCATrustedCertificates")
            }
            if let certificateFile = tls.certificateFile, let keyFile = tls.keyFile {
                try natsOptions_LoadCertificatesChain(options, certificateFile, keyFile).check("natsOptions_LoadCertificatesChain")
            }
            if let expectedHostname = tls.expectedHostname {
                try natsOptions_SetExpectedHostname(options, expectedHostname).check("natsOptions_SetExpectedHostname")
            }
        }
        try natsOptions_SetTimeout(options, milliseconds(configuration.connectTimeout)).check("natsOptions_SetTimeout")
        try natsOptions_SetAllowReconnect(options, true).check("natsOptions_SetAllowReconnect")
        // -1: reconnect forever. A node outlives a NATS restart of any length.
        try natsOptions_SetMaxReconnect(options, -1).check("natsOptions_SetMaxReconnect")
        try natsOptions_SetReconnectWait(options, milliseconds(configuration.reconnectWait)).check("natsOptions_SetReconnectWait")
        try natsOptions_SetReconnectBufSize(options, Int32(clamping: configuration.reconnectBufferBytes)).check("natsOptions_SetReconnectBufSize")
        try natsOptions_SetMaxPendingMsgs(options, Int32(clamping: configuration.maxPendingMessagesPerSubscription)).check("natsOptions_SetMaxPendingMsgs")
        try natsOptions_SetSendAsap(options, configuration.sendAsap).check("natsOptions_SetSendAsap")
        if let writeDeadline = configuration.writeDeadline {
            try natsOptions_SetWriteDeadline(options, milliseconds(writeDeadline)).check("natsOptions_SetWriteDeadline")
        }
        try natsOptions_SetDisconnectedCB(options, natsDisconnected, closure).check("natsOptions_SetDisconnectedCB")
        try natsOptions_SetReconnectedCB(options, natsReconnected, closure).check("natsOptions_SetReconnectedCB")
        try natsOptions_SetClosedCB(options, natsClosed, closure).check("natsOptions_SetClosedCB")
        try natsOptions_SetErrorHandler(options, natsAsyncError, closure).check("natsOptions_SetErrorHandler")
        if configuration.retryOnFailedConnect {
            try natsOptions_SetRetryOnFailedConnect(options, true, natsConnected, closure).check("natsOptions_SetRetryOnFailedConnect")
        }
    }

    /// Calls `body` with a C array of C strings (cnats copies them).
    private static func withCStrings(
        _ strings: [String],
        _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>, Int32) throws(BusError) -> Void
    ) throws(BusError) {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        var pointers = copies.map { UnsafePointer($0) }
        let result: Result<Void, BusError> = pointers.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return .success(()) }
            return Result { () throws(BusError) in try body(base, Int32(buffer.count)) }
        }
        try result.get()
    }
}
