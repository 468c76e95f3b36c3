/// The webhooks of one application (or of every application, `*`), as SRS names them:
/// `on_publish` and `on_play` decide (a 2xx answer admits, anything else refuses),
/// `on_unpublish` and `on_stop` are told of the end.
public struct ApplicationHooks: Sendable, Equatable {
    public var onPublish: HookEndpoint?
    public var onUnpublish: HookEndpoint?
    public var onPlay: HookEndpoint?
    public var onStop: HookEndpoint?
    /// When a deciding hook cannot be reached or does not answer in time (after its
    /// retries): true admits, false (the default) refuses as unavailable.
    public var failOpen: Bool

    public init(onPublish: HookEndpoint? = nil, onUnpublish: HookEndpoint? = nil, onPlay: HookEndpoint? = nil, onStop: HookEndpoint? = nil, failOpen: Bool = false) {
        self.onPublish = onPublish
        self.onUnpublish = onUnpublish
        self.onPlay = onPlay
        self.onStop = onStop
        self.failOpen = failOpen
    }

    public func endpoint(_ action: HookAction) -> HookEndpoint? {
        switch action {
        case .onPublish: onPublish
        case .onUnpublish: onUnpublish
        case .onPlay: onPlay
        case .onStop: onStop
        }
    }
}

/// Every application's hooks: its own, or else those of `*`.
public struct HookConfiguration: Sendable, Equatable {
    public var applications: [String: ApplicationHooks]

    /// The key whose hooks apply to applications without their own.
    public static let everyApplication = "*"

    public init(_ applications: [String: ApplicationHooks] = [:]) {
        self.applications = applications
    }

    public var isEmpty: Bool { applications.isEmpty }

    public func hooks(for app: String) -> ApplicationHooks? {
        applications[app] ?? applications[Self.everyApplication]
    }
}
