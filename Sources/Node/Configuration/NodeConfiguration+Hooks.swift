import Foundation
import Hooks
import Media

extension NodeConfiguration {
    /// `hooks` from the file: each application name valid (or `*`), each URL http(s), each
    /// timeout within 0.1…30 s and each retry count within 0…5.
    static func hooks(_ settings: [String: NodeConfigurationFile.HookSettings]) throws -> HookConfiguration {
        var applications: [String: ApplicationHooks] = [:]
        for (app, value) in settings {
            guard app == HookConfiguration.everyApplication || StreamPath.isValidComponent(app) else {
                throw ConfigurationError.invalidValue("hooks: invalid application name '\(app)' (an application, or * for all)")
            }
            func endpoint(_ endpoint: NodeConfigurationFile.HookEndpointSettings?, _ action: HookAction) throws -> HookEndpoint? {
                guard let endpoint else { return nil }
                let key = "hooks.\(app).\(Self.key(action))"
                guard let url = endpoint.url, let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme?.lowercased()), parsed.host?.isEmpty == false else {
                    throw ConfigurationError.invalidValue("\(key).url: expected an http:// or https:// URL, got '\(endpoint.url?.prefix(80) ?? "nothing")'")
                }
                let timeout = endpoint.timeoutSeconds ?? 2
                guard timeout.isFinite, (0.1...30).contains(timeout) else {
                    throw ConfigurationError.invalidValue("\(key).timeoutSeconds must be within 0.1…30, got \(timeout)")
                }
                let retries = endpoint.retries ?? HookEndpoint.defaultRetries
                guard (0...5).contains(retries) else {
                    throw ConfigurationError.invalidValue("\(key).retries must be within 0…5, got \(retries)")
                }
                return HookEndpoint(url: url, timeout: .milliseconds(Int64((timeout * 1000).rounded())), retries: retries)
            }
            applications[app] = ApplicationHooks(
                onPublish: try endpoint(value.onPublish, .onPublish), onUnpublish: try endpoint(value.onUnpublish, .onUnpublish),
                onPlay: try endpoint(value.onPlay, .onPlay), onStop: try endpoint(value.onStop, .onStop),
                failOpen: value.failOpen ?? false
            )
        }
        return HookConfiguration(applications)
    }

    /// The deciding hooks whose attempts and pauses outlast the admission timeout: their
    /// last attempts would never count (the session is refused first).
    func hooksOutlastingAdmission() -> [String] {
        hooks.applications.sorted { $0.key < $1.key }.flatMap { app, hooks in
            [(HookAction.onPublish, hooks.onPublish), (.onPlay, hooks.onPlay)].compactMap { action, endpoint in
                guard let endpoint, endpoint.worstCase > admissionTimeout else { return nil }
                return "hooks.\(app).\(Self.key(action))"
            }
        }
    }

    /// The file's key of a hook (`onPublish`).
    static func key(_ action: HookAction) -> String {
        switch action {
        case .onPublish: "onPublish"
        case .onUnpublish: "onUnpublish"
        case .onPlay: "onPlay"
        case .onStop: "onStop"
        }
    }
}
