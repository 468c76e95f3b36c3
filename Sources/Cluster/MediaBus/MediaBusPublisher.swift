import Media
import NIOConcurrencyHelpers
import NIOCore

/// Publishes one rendition's frames on its media subject.
///
/// The encoder (sequence numbering) sits behind a lock that is also held across the
/// publish calls, so that sequence order is wire order even if frames came from several
/// threads; in practice one publisher thread feeds it and the lock is uncontended.
public final class MediaBusPublisher: Sendable {
    public let subject: MediaBusSubject
    private let bus: any Bus
    private let encoder: NIOLockedValueBox<MediaBusFrameEncoder>
    private let allocator = ByteBufferAllocator()

    /// - Parameters:
    ///   - epoch: a value that differs from the previous publisher session's; e.g. the
    ///     ingest's timestamp epoch or a random number.
    ///   - maxFrameBytes: frames above it are refused; see `MediaBusFrameEncoder`.
    ///   - hasOwnClock: the publication's timeline is its publisher's own (an ingest's); see
    ///     `MediaBusFrameHeader.hasOwnClock`.
    public init(bus: any Bus, subject: MediaBusSubject, epoch: UInt32, maxFrameBytes: Int = MediaBusReassembler.defaultMaxFrameBytes, hasOwnClock: Bool = false) {
        self.bus = bus
        self.subject = subject
        self.encoder = NIOLockedValueBox(MediaBusFrameEncoder(epoch: epoch, maxMessageBytes: bus.maxPayload, maxFrameBytes: maxFrameBytes, hasOwnClock: hasOwnClock))
    }

    /// Encodes and publishes `frame` (one message per fragment). A failed publish leaves a
    /// sequence gap, which receivers handle by resuming at the next keyframe.
    ///
    /// A frame nobody can receive (`Bus.hasSubscribers`) is not encoded; the sequence
    /// still advances, so a subscriber that arrives later sees a gap and starts at a
    /// keyframe, as it would anyway.
    public func publish(_ frame: MediaFrame) throws(MediaBusPublishError) {
        guard bus.hasSubscribers(to: subject.subject) else {
            encoder.withLockedValue { $0.skip() }
            return
        }
        // `withLockedValue` rethrows untyped errors, hence the Result.
        try encoder.withLockedValue { encoder -> Result<Void, MediaBusPublishError> in
            let messages: [ByteBuffer]
            do throws(MediaBusFrameError) {
                messages = try encoder.encode(frame, allocator: allocator)
            } catch {
                return .failure(.frame(error))
            }
            for message in messages {
                do throws(BusError) {
                    try bus.publish(subject: subject.subject, payload: message)
                } catch {
                    return .failure(.bus(error))
                }
            }
            return .success(())
        }.get()
    }
}

/// Why `MediaBusPublisher.publish` failed.
public enum MediaBusPublishError: Error, Equatable {
    /// The frame cannot be encoded (too large).
    case frame(MediaBusFrameError)
    /// The bus refused a message.
    case bus(BusError)
}
