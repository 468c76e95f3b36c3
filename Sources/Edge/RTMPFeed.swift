import Media
import NIOConcurrencyHelpers
import NIOCore
import RTMP

/// An RTMP upstream: a `play` of the stream (`RTMPClient`), whose frames are held from
/// `NetStream.Play.Start` until `run` takes them (a few frames at most: `run` follows at once).
final class RTMPFeed: UpstreamFeed {
    enum Start: Sendable {
        case started(RTMPFeed)
        case notFound
        case failed(String)
    }

    private struct State {
        var deliver: (@Sendable ([MediaFrame]) -> Void)?
        var held: [MediaFrame] = []
        var heldBytes = 0
        var start: CheckedContinuation<Bool, Never>?
        var startResult: Bool?
        var refusal: String?
        var end: (reason: String, clean: Bool)?
        var ended: CheckedContinuation<(reason: String, clean: Bool), Never>?
    }

    /// Frames held before `run` beyond this many bytes are dropped (the pull then resumes
    /// at the next keyframe the hub sees).
    static let maxHeldBytes = 16 << 20

    private let state = NIOLockedValueBox(State())
    private let channel = NIOLockedValueBox<(any Channel)?>(nil)

    private init() {}

    /// Connects and asks to play `url`; waits (bounded by `timeout`) for the server's answer.
    static func open(_ url: RTMPClientURL, timeout: TimeAmount) async -> Start {
        let feed = RTMPFeed()
        let channel: any Channel
        do {
            channel = try await RTMPClient.connect(url, role: .play, connectTimeout: timeout) { event in feed.handle(event) }
        } catch {
            return .failed("\(error)")
        }
        feed.channel.withLockedValue { $0 = channel }
        // No answer in time: close, which reports the end and so the failure.
        let deadline = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        let started = await withCheckedContinuation { continuation in
            let answered = feed.state.withLockedValue { state -> Bool? in
                if let result = state.startResult { return result }
                state.start = continuation
                return nil
            }
            if let answered { continuation.resume(returning: answered) }
        }
        deadline.cancel()
        if started { return .started(feed) }
        let refusal = feed.state.withLockedValue { $0.refusal }
        if refusal == "NetStream.Play.StreamNotFound" { return .notFound }
        return .failed(refusal ?? feed.state.withLockedValue { $0.end?.reason } ?? "no answer")
    }

    func run(_ deliver: @escaping @Sendable ([MediaFrame]) -> Void) async throws {
        let held = state.withLockedValue { state -> [MediaFrame] in
            state.deliver = deliver
            defer { state.held = [] }
            return state.held
        }
        if !held.isEmpty { deliver(held) }
        let end = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ended = state.withLockedValue { state -> (reason: String, clean: Bool)? in
                    if let end = state.end { return end }
                    state.ended = continuation
                    return nil
                }
                if let ended { continuation.resume(returning: ended) }
            }
        } onCancel: {
            channel.withLockedValue { $0 }?.close(promise: nil)
        }
        guard end.clean else { throw RTMPFeedError(reason: end.reason) }
    }

    private func handle(_ event: RTMPClientEvent) {
        switch event {
        case .started:
            resumeStart(true)
        case .writable:
            break
        case .refused(let code):
            state.withLockedValue { $0.refusal = code }
            resumeStart(false)
        case .frame(let frame):
            let deliver = state.withLockedValue { state -> (@Sendable ([MediaFrame]) -> Void)? in
                if let deliver = state.deliver { return deliver }
                let bytes = frame.payload.readableBytes
                if state.heldBytes + bytes <= Self.maxHeldBytes {
                    state.held.append(frame)
                    state.heldBytes += bytes
                }
                return nil
            }
            deliver?([frame])
        case .ended(let reason, let clean):
            let waiter = state.withLockedValue { state -> CheckedContinuation<(reason: String, clean: Bool), Never>? in
                state.end = (reason, clean)
                defer { state.ended = nil }
                return state.ended
            }
            resumeStart(false)
            waiter?.resume(returning: (reason, clean))
        }
    }

    private func resumeStart(_ started: Bool) {
        let waiter = state.withLockedValue { state -> CheckedContinuation<Bool, Never>? in
            guard state.startResult == nil else { return nil }
            state.startResult = started
            defer { state.start = nil }
            return state.start
        }
        waiter?.resume(returning: started)
    }
}

struct RTMPFeedError: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}
