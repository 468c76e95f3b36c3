/// What a webhook is about, named as SRS names its `http_hooks`, and sent as `action`.
public enum HookAction: String, Sendable, Codable, CaseIterable {
    case onPublish = "on_publish"
    case onUnpublish = "on_unpublish"
    case onPlay = "on_play"
    case onStop = "on_stop"

    /// Whether the answer decides the session (publish, play) or is only told (the ends).
    public var decides: Bool { self == .onPublish || self == .onPlay }
}
