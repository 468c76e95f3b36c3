import NIOCore

/// A frame as it leaves a hub: the normalised frame plus its serialisations, one slot per
/// `OutputFormat` (nil until a subscriber of that format needs it).
///
/// A struct of references: copying it into a thousand queues copies no media bytes.
public struct HubPacket: Sendable {
    public let frame: MediaFrame
    /// True where a viewer may start or resume: a video keyframe, any audio frame of a
    /// stream without video, and the configuration records and metadata.
    public let isSyncPoint: Bool
    public internal(set) var wire: [ByteBuffer?]

    /// The bytes for `format`; hubs fill every format that has subscribers before
    /// enqueueing, so a subscriber's own format is always present.
    @inlinable
    public func bytes(for format: OutputFormat) -> ByteBuffer? {
        wire[format.rawValue]
    }

    /// The size charged against a subscriber's queue bound.
    func cost(format: OutputFormat?) -> Int {
        if let format, let buffer = bytes(for: format) { return buffer.readableBytes }
        return frame.payload.readableBytes
    }
}
