/// Changes of a NATSBus's connection, reported from a cnats thread.
public enum NATSBusEvent: Sendable, Equatable {
    /// The connection to the server was lost; publishes are buffered meanwhile.
    case disconnected
    /// Connected again; subscriptions were renewed and buffered publishes sent.
    case reconnected
    /// Connected for the first time after `retryOnFailedConnect` kept trying.
    case connected
    /// The connection is closed for good.
    case closed
    /// An asynchronous error, e.g. a slow consumer dropping messages.
    case error(NATSError)
}
