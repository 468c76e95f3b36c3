import Media
import NIOConcurrencyHelpers
import NIOCore

/// Frames that arrive (on an event loop) before their consumer exists, handed over in
/// order once it does.
///
/// The consumer drains what is held, outside the lock, until a drain finds nothing; only
/// then does it become the direct receiver. Frames arriving while a drain delivers are held
/// behind it, so no newer frame overtakes an older one: a reordered GOP burst would move
/// the hub's timeline back, and its normaliser would flatten the frames to one timestamp.
final class FrameHandoff: Sendable {
    private struct State {
        var deliver: (@Sendable ([MediaFrame]) -> Void)?
        var held: [MediaFrame] = []
        var heldBytes = 0
    }

    /// Frames held beyond this many bytes are dropped (the pull then resumes at the next
    /// keyframe the hub sees).
    let maxHeldBytes: Int
    private let state = NIOLockedValueBox(State())

    init(maxHeldBytes: Int) {
        self.maxHeldBytes = maxHeldBytes
    }

    /// Frames from the connection, in order; one caller at a time (the channel's event loop).
    func receive(_ frames: [MediaFrame]) {
        let deliver = state.withLockedValue { state -> (@Sendable ([MediaFrame]) -> Void)? in
            if let deliver = state.deliver { return deliver }
            for frame in frames {
                let bytes = frame.payload.readableBytes
                guard state.heldBytes + bytes <= maxHeldBytes else { break }
                state.held.append(frame)
                state.heldBytes += bytes
            }
            return nil
        }
        deliver?(frames)
    }

    /// Delivers what is held, then makes `deliver` the receiver of every later frame.
    /// Bounded: each round delivers what arrived during the one before, at most
    /// `maxHeldBytes`, and the connection delivers no faster than the consumer.
    func start(_ deliver: @escaping @Sendable ([MediaFrame]) -> Void) {
        while true {
            let held = state.withLockedValue { state -> [MediaFrame] in
                guard !state.held.isEmpty else {
                    state.deliver = deliver
                    return []
                }
                defer {
                    state.held = []
                    state.heldBytes = 0
                }
                return state.held
            }
            guard !held.isEmpty else { return }
            deliver(held)
        }
    }
}
