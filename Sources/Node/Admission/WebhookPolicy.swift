import Hooks
import Media
import Logging
import Session

/// `on_publish` and `on_play`: the operator's backend decides, per application
/// (`hooks`). A 2xx admits; any other answer refuses (`NetStream.Publish.Denied`,
/// `NetStream.Play.Failed`, HTTP 403); a backend that cannot be reached or does not answer in
/// time refuses as unavailable (HTTP 503), or admits where the application says `failOpen`.
///
/// Last in the list: a request the cheap checks refuse costs the backend nothing.
struct WebhookPolicy: AdmissionPolicy {
    let hooks: HookConfiguration
    let caller: HookCaller
    let nodeID: String
    let logger: Logger

    func verdict(_ request: PublishRequest) async -> PolicyVerdict {
        guard let application = hooks.hooks(for: request.path.app), let endpoint = application.onPublish else { return .pass }
        let answer = await caller.call(endpoint, .publish(request, nodeID: nodeID))
        if case .admitted(let instruction) = answer {
            if let redirect = instruction.usableRedirect {
                return .refuse(PolicyRefusal(.redirected(to: redirect), metric: "hook_redirected", logged: "the on_publish hook redirects to \(redirect)"))
            }
            if let name = instruction.name, name != request.path.name {
                guard StreamPath.isValidComponent(name) else {
                    return .refuse(PolicyRefusal(.denied("refused by the on_publish hook"), metric: "hook_refused", logged: "the on_publish hook renamed the stream to an invalid name"))
                }
                return .rename(name)
            }
        }
        return decide(answer, action: .onPublish, application: application, stream: "\(request.path)").map { .refuse($0) } ?? .pass
    }

    func check(_ request: PlayRequest) async -> PolicyRefusal? {
        let stream = request.path.primary.stream
        guard let application = hooks.hooks(for: stream.app), let endpoint = application.onPlay else { return nil }
        let answer = await caller.call(endpoint, .play(request, nodeID: nodeID))
        if case .admitted(let instruction) = answer, let redirect = instruction.usableRedirect {
            return PolicyRefusal(.redirected(to: redirect), metric: "hook_redirected", logged: "the on_play hook redirects to \(redirect)")
        }
        return decide(answer, action: .onPlay, application: application, stream: "\(request.path)")
    }

    private func decide(_ answer: HookCaller.Answer, action: HookAction, application: ApplicationHooks, stream: String) -> PolicyRefusal? {
        switch answer {
        case .admitted:
            return nil
        case .refused(let status):
            return PolicyRefusal(.denied("refused by the \(action.rawValue) hook"), metric: "hook_refused", logged: "the \(action.rawValue) hook answered HTTP \(status)")
        case .failed(let why) where application.failOpen:
            logger.warning("admitting without the \(action.rawValue) hook (failOpen)", metadata: ["stream": "\(stream)", "reason": "\(why)"])
            return nil
        case .failed(let why):
            return PolicyRefusal(.unavailable("the \(action.rawValue) hook did not answer"), metric: "hook_failed", logged: "the \(action.rawValue) hook: \(why)")
        }
    }
}
