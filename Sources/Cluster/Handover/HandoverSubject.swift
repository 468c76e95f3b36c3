import Media
import NIOCore

/// The subjects of a job's handover between transcoders (`RungHandover`):
///
/// - `handover.ask.<app>.<name>`: the incoming's request, an Int64 (big-endian): the
///   newest source PTS it has read. The outgoing answers the threshold, an Int64.
/// - `handover.done.<app>.<name>`: the outgoing stopped a rung (its name, UTF-8), after
///   that rung's last frame.
///
/// Tokens are escaped as media subjects' are (`MediaBusSubject`).
public enum HandoverSubject {
    public static func ask(_ path: StreamPath) -> String {
        "handover.ask.\(MediaBusSubject.token(path.app)).\(MediaBusSubject.token(path.name))"
    }

    public static func done(_ path: StreamPath) -> String {
        "handover.done.\(MediaBusSubject.token(path.app)).\(MediaBusSubject.token(path.name))"
    }

    public static func encode(_ timestamp: Int64) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeInteger(timestamp)
        return buffer
    }

    /// Nil unless the payload is exactly one Int64.
    public static func decodeTimestamp(_ payload: ByteBuffer) -> Int64? {
        guard payload.readableBytes == 8 else { return nil }
        return payload.getInteger(at: payload.readerIndex, as: Int64.self)
    }

    /// A rung name as `StreamPath` allows one; nil otherwise.
    public static func decodeRung(_ payload: ByteBuffer) -> String? {
        guard payload.readableBytes <= 128, let name = payload.getString(at: payload.readerIndex, length: payload.readableBytes),
              StreamPath.isValidComponent(name)
        else { return nil }
        return name
    }
}
