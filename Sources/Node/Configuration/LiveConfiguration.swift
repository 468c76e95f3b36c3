import Media
import Synchronization
import Tokens
import Transcode

/// The settings a running node takes on a reload, and the parts that take them: each
/// assembly subscribes what it rebuilds (`ConfigurationReloader` calls `apply`). Ladders
/// are read where they are used, from one shared value.
final class LiveConfiguration: Sendable {
    /// Takes the new configuration and its signed-URL verifier (keys read; nil without `tokens`).
    typealias Subscriber = @Sendable (NodeConfiguration, TokenVerifier?) async -> Void

    /// Transcode ladders by application: the admission, the transcoder, the coordinator and
    /// the HLS rung directory read them for each new stream.
    let ladders: Reloadable<[String: Ladder]>
    private let state: Mutex<(current: NodeConfiguration, resolved: NodeConfigurationFile, subscribers: [Subscriber])>

    /// - Parameter resolved: the settings as the sources gave them, which the next reload is
    ///   compared with.
    init(_ configuration: NodeConfiguration, resolved: NodeConfigurationFile = NodeConfigurationFile()) {
        ladders = Reloadable(configuration.ladders)
        state = Mutex((configuration, resolved, []))
    }

    var current: NodeConfiguration { state.withLock { $0.current } }
    var resolved: NodeConfigurationFile { state.withLock { $0.resolved } }

    func setResolved(_ resolved: NodeConfigurationFile) {
        state.withLock { $0.resolved = resolved }
    }

    func subscribe(_ subscriber: @escaping Subscriber) {
        state.withLock { $0.subscribers.append(subscriber) }
    }

    /// Gives `configuration` to every part, in the order they subscribed.
    func apply(_ configuration: NodeConfiguration, tokens: TokenVerifier?) async {
        let subscribers = state.withLock { state in
            state.current = configuration
            return state.subscribers
        }
        ladders.set(configuration.ladders)
        for subscriber in subscribers { await subscriber(configuration, tokens) }
    }
}
