import Dispatch
import Media
import Synchronization

/// The bounded queue between whoever feeds a pipeline (a hub subscriber, a test) and its
/// worker thread, and the policy applied when the worker falls behind.
///
/// The bound is on queued coded video frames (`capacity`, about `capacity / fps` seconds
/// of lag). When it is reached the pipeline is behind real time, and it sheds load in a
/// way a viewer can predict:
/// - an arriving non-keyframe is dropped, and so is every following video frame up to the
///   next keyframe (a P-frame without its references would only decode to garbage);
/// - an arriving keyframe replaces the queued video frames (an older, partly decoded
///   GOP is worth less than a fresh start), which are dropped.
///
/// Audio, sequence headers and metadata are never dropped for lag unless the queue holds
/// `hardLimit` items in total (a stream that is all audio, or a flood of headers).
/// Every dropped frame counts in `lagDroppedFrames`: the `transcode_lag` metric.
struct InboxState {
    enum Offer: Equatable {
        case queued
        /// Queued after dropping this many queued video frames.
        case queuedReplacing(Int)
        case dropped
    }

    let capacity: Int
    let hardLimit: Int
    private(set) var items: [MediaFrame] = []
    private(set) var queuedVideo = 0
    private(set) var skippingToKeyframe = false
    private(set) var lagDroppedFrames = 0
    private(set) var ended = false

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        self.hardLimit = max(1, capacity) * 8
    }

    static func isCodedVideo(_ frame: MediaFrame) -> Bool {
        frame.kind == .video && !frame.isSequenceHeader
    }

    /// The latest source timestamp offered, queued or not: the head of the input.
    private(set) var newestTimestamp: Int64?

    mutating func offer(_ frame: MediaFrame) -> Offer {
        guard !ended else { return .dropped }
        newestTimestamp = max(newestTimestamp ?? frame.timestamp, frame.timestamp)
        guard items.count < hardLimit else {
            lagDroppedFrames += 1
            if Self.isCodedVideo(frame) { skippingToKeyframe = true }
            return .dropped
        }
        guard Self.isCodedVideo(frame) else {
            items.append(frame)
            return .queued
        }
        if skippingToKeyframe {
            guard frame.isKeyframe else {
                lagDroppedFrames += 1
                return .dropped
            }
            skippingToKeyframe = false
        }
        guard queuedVideo >= capacity else {
            items.append(frame)
            queuedVideo += 1
            return .queued
        }
        guard frame.isKeyframe else {
            skippingToKeyframe = true
            lagDroppedFrames += 1
            return .dropped
        }
        let before = items.count
        items.removeAll(where: Self.isCodedVideo)
        let dropped = before - items.count
        lagDroppedFrames += dropped
        items.append(frame)
        queuedVideo = 1
        return .queuedReplacing(dropped)
    }

    /// Everything queued, in order.
    mutating func take() -> [MediaFrame] {
        let taken = items
        items.removeAll(keepingCapacity: true)
        queuedVideo = 0
        return taken
    }

    /// No more input; what is queued is still taken.
    mutating func end() {
        ended = true
    }
}

/// `InboxState` shared between producers and the worker thread: a mutex for the state and
/// a semaphore the worker sleeps on. Producers never block.
final class TranscodeInbox: Sendable {
    private let state: Mutex<InboxState>
    private let wakeUp = DispatchSemaphore(value: 0)

    init(capacity: Int) {
        state = Mutex(InboxState(capacity: capacity))
    }

    /// Queues `frame` under the lag policy; false when it was dropped.
    @discardableResult
    func offer(_ frame: MediaFrame) -> Bool {
        let result = state.withLock { $0.offer(frame) }
        guard result != .dropped else { return false }
        wakeUp.signal()
        return true
    }

    func end() {
        state.withLock { $0.end() }
        wakeUp.signal()
    }

    var lagDroppedFrames: Int { state.withLock { $0.lagDroppedFrames } }

    /// The latest source timestamp offered so far.
    var newestTimestamp: Int64? { state.withLock { $0.newestTimestamp } }

    /// Blocks the calling (worker) thread until frames are queued or the input ended.
    /// Returns the frames and whether the input has ended (and everything was taken).
    func waitForFrames() -> (frames: [MediaFrame], ended: Bool) {
        while true {
            let (frames, ended) = state.withLock { state in (state.take(), state.ended) }
            if !frames.isEmpty || ended {
                return (frames, ended)
            }
            wakeUp.wait()
        }
    }
}
