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

    /// Frames held before `run` beyond this many bytes are dropped (the pull then resumes
    /// at the next keyframe the hub sees).
    static let maxHeldBytes = 16 << 20

    /// The frames from `NetStream.Play.Start` until `run`, then `run`'s receiver.
    private let handoff = FrameHandoff(maxHeldBytes: RTMPFeed.maxHeldBytes)
    private let refusal = NIOLockedValueBox<String?>(nil)
    /// Whether the server started the play (false: refused, or the connection ended first).
    private let started = OneShot<Bool>()
    /// Why the connection ended, and whether the stream ended cleanly there.
    private let ended = OneShot<End>()
    private let channel = NIOLockedValueBox<(any Channel)?>(nil)

    private init() {}

    /// Connects and asks to play `url`; waits (bounded by `timeout`) for the server's answer.
    static func open(_ url: RTMPClientURL, timeout: TimeAmount) async -> Start {
        let feed = RTMPFeed()
        let channel: any Channel
        do {
            channel = try await RTMPClient.connect(url, role: .play, connectTimeout: timeout) { event in feed.handle(event) }
        } catch {
            return .failed(ConnectionFailure.describe(error))
        }
        feed.channel.withLockedValue { $0 = channel }
        // No answer in time: close, which reports the end and so the failure.
        let deadline = channel.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
        let started = await feed.started.wait()
        deadline.cancel()
        if started { return .started(feed) }
        let refusal = feed.refusal.withLockedValue { $0 }
        if refusal == "NetStream.Play.StreamNotFound" { return .notFound }
        return .failed(refusal ?? feed.ended.value?.reason ?? "no answer")
    }

    func run(_ deliver: @escaping @Sendable ([MediaFrame]) -> Void) async throws {
        handoff.start(deliver)
        let end = await withTaskCancellationHandler {
            await ended.wait()
        } onCancel: {
            channel.withLockedValue { $0 }?.close(promise: nil)
        }
        guard end.clean else { throw RTMPFeedError(reason: end.reason) }
    }

    private func handle(_ event: RTMPClientEvent) {
        switch event {
        case .started:
            started.set(true)
        case .writable, .reconnectRequested:
            // A player does not advertise reconnects, so is never asked.
            break
        case .refused(let code):
            refusal.withLockedValue { $0 = code }
            started.set(false)
        case .frames(let frames):
            handoff.receive(frames)
        case .ended(let reason, let clean):
            ended.set(End(reason: reason, clean: clean))
            started.set(false)
        }
    }

    struct End: Sendable {
        let reason: String
        let clean: Bool
    }
}

struct RTMPFeedError: Error, CustomStringConvertible {
    let reason: String
    var description: String { reason }
}
