import Hooks
import Media
import Session

/// `on_unpublish` and `on_stop`: each publisher's and viewer's end is told to the
/// application's hook, fire-and-forget (`HookNotifier`'s bounded queue), with its duration,
/// bytes and reason. Sessions the node makes itself without asking a hook (a transcoder's
/// rungs, forwards) are not told.
struct WebhookNotifications: SessionObserver {
    /// The hooks in force (a reload replaces them).
    let hooks: Reloadable<HookConfiguration>
    let notifier: HookNotifier
    let nodeID: String

    func observe(_ event: SessionEvent) async {
        switch event {
        case .publishEnded(let session) where session.transport != .transcode && session.parent == nil:
            guard let endpoint = hooks.value.hooks(for: session.path.app)?.onUnpublish else { return }
            notifier.notify(endpoint, .unpublished(session, nodeID: nodeID))
        case .playEnded(let session) where session.transport != .forward:
            guard let endpoint = hooks.value.hooks(for: session.path.stream.app)?.onStop else { return }
            notifier.notify(endpoint, .stopped(session, nodeID: nodeID))
        default:
            break
        }
    }
}
