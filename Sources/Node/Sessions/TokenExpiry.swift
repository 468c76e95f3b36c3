import Foundation
import Logging
import Metrics
import Session
import Synchronization

/// Kicks sessions whose token expired (`TokenPolicy`, with `onExpiry: kick`). The policy
/// says which session id expires when before the session exists; as an observer, this
/// learns the session when it starts, and forgets it when it ends. One sweep a second
/// kicks the expired ones ("token expired"). Bounded: at most `maxEntries` expected and as
/// many tracked; an expectation whose session never started (refused by a later policy) is
/// dropped after a minute.
final class TokenExpiry: SessionObserver, Sendable {
    private struct Tracked {
        var expires: Date
        var kick: SessionKick
    }

    private struct State {
        var expected: [String: (expires: Date, since: Date)] = [:]
        var tracked: [String: Tracked] = [:]
    }

    static let maxEntries = 100_000
    private let state = Mutex(State())
    private let logger: Logger
    private let sweeper = Mutex<Task<Void, Never>?>(nil)

    init(logger: Logger) {
        self.logger = logger
    }

    deinit {
        sweeper.withLock { $0?.cancel() }
    }

    /// Starts the once-a-second sweep (at the node's start).
    func start() {
        sweeper.withLock { task in
            guard task == nil else { return }
            task = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    self?.sweep(now: Date())
                }
            }
        }
    }

    /// The session `id`, once it starts, ends at `expires`.
    func expect(_ id: String, at expires: Date) {
        state.withLock { state in
            guard state.expected.count < Self.maxEntries else { return }
            state.expected[id] = (expires, Date())
        }
    }

    func observe(_ event: SessionEvent) async {
        switch event {
        case .publishStarted(let session):
            track(session.sessionID.rawValue) { session.kick($0) }
        case .playStarted(let session):
            track(session.id.rawValue) { session.kick($0) }
        case .publishEnded(let session):
            forget(session.sessionID.rawValue)
        case .playEnded(let session):
            forget(session.id.rawValue)
        }
    }

    var trackedCount: Int { state.withLock { $0.tracked.count } }

    private func track(_ id: String, kick: @escaping SessionKick) {
        state.withLock { state in
            guard let expected = state.expected.removeValue(forKey: id), state.tracked.count < Self.maxEntries else { return }
            state.tracked[id] = Tracked(expires: expected.expires, kick: kick)
        }
    }

    private func forget(_ id: String) {
        state.withLock { state in
            state.tracked[id] = nil
            state.expected[id] = nil
        }
    }

    func sweep(now: Date) {
        let expired = state.withLock { state -> [(String, SessionKick)] in
            state.expected = state.expected.filter { now.timeIntervalSince($0.value.since) < 60 }
            let due = state.tracked.filter { $0.value.expires <= now }
            for id in due.keys { state.tracked[id] = nil }
            return due.map { ($0.key, $0.value.kick) }
        }
        for (id, kick) in expired {
            logger.notice("kicking session: its token expired", metadata: ["session": "\(id)"])
            Counter(label: "estuary_sessions_token_expired_total").increment()
            kick("token expired")
        }
    }
}
