import AMF0
import NIOCore

/// Enhanced RTMP v2's track maps in `onMetaData` (`videoTrackIdInfoMap`,
/// `audioTrackIdInfoMap`: objects keyed by track id, "Enhancing onMetaData"), as the node
/// writes them for a multitrack stream and as a node that pulls the stream reads them.
///
/// A multitrack publisher's other tracks are renditions of their own (`track1`, `audio1`,
/// …). A player of the stream gets only track 0, and an edge outside a cluster has no
/// coordinator to ask which others exist: the stream's metadata lists them, in the spec's
/// terms, so that the edge can offer them in its HLS masters as the origin does.
public enum TrackIdInfoMaps {
    public static let videoKey = "videoTrackIdInfoMap"
    public static let audioKey = "audioTrackIdInfoMap"
    /// Track ids read from one map at most (the publisher side takes 7 of each).
    public static let mostTracks = 15

    /// The most bytes both maps add to a metadata body, with `mostTracks` three-digit ids in
    /// each: per map its key (a 2-byte length and the name), an object marker and end (4),
    /// and per id its key (2 + 3) and an empty object (4). The node writes the maps, not the
    /// publisher, so they do not count against the publisher's `maxMetadataBytes`.
    public static let mostEncodedBytes = [videoKey, audioKey].reduce(0) { bytes, key in
        bytes + 2 + key.utf8.count + 4 + mostTracks * (2 + 3 + 4)
    }

    /// Values a metadata decode may meet before giving up, for a body of `bytes`: at least a
    /// node's default `maxMetadataValues` and the maps', and, since every AMF0 value takes a
    /// byte, as many as a body within the default byte limit can hold. An origin that raised
    /// its `maxMetadataValues` is read whole by a node that did not.
    static func valueBudget(forBodyOf bytes: Int) -> Int {
        max(leastValueBudget, min(bytes, mostValueBudget))
    }
    private static let leastValueBudget = RTMPServerConfiguration().maxMetadataValues + 4 + 2 * Int(UInt8.max)
    private static let mostValueBudget = RTMPServerConfiguration().maxMetadataBytes + mostEncodedBytes

    /// `metadata` (the publisher's `onMetaData` value, or none) with both maps set to the
    /// open tracks' ids, replacing any the publisher sent: they list what the node serves, and
    /// a publisher must not make pulling nodes open renditions that do not exist. Without
    /// tracks, and without maps of the publisher's, its metadata unchanged (byte for byte).
    public static func metadata(_ metadata: AMF0Value?, videoTracks: [UInt8], audioTracks: [UInt8]) -> AMF0Value? {
        let claimed = metadata?.properties?.contains { $0.name == videoKey || $0.name == audioKey } ?? false
        guard !videoTracks.isEmpty || !audioTracks.isEmpty || claimed else { return metadata }
        var properties = (metadata?.properties ?? []).filter { $0.name != videoKey && $0.name != audioKey }
        func map(_ ids: [UInt8]) -> AMF0Value {
            .object(ids.sorted().map { AMF0Property(String($0), .object([])) })
        }
        if !videoTracks.isEmpty { properties.append(AMF0Property(videoKey, map(videoTracks))) }
        if !audioTracks.isEmpty { properties.append(AMF0Property(audioKey, map(audioTracks))) }
        if case .object = metadata { return .object(properties) }
        return .ecmaArray(properties)
    }

    /// The renditions an `onMetaData` body's maps name (`track1`, …, `audio1`, …), in order;
    /// none when it is not metadata, has no maps, or does not decode. Bounded: at most
    /// `mostTracks` of each kind, ids 1–255 (track 0 is the stream itself), the body decoded
    /// with at most `valueBudget(forBodyOf:)` values.
    public static func renditions(inMetadataBody body: ByteBuffer) -> [String] {
        let budget = valueBudget(forBodyOf: body.readableBytes)
        guard let message = try? DataMessage(from: body, decoder: AMF0Decoder(maxValues: budget)), let metadata = message.metadata else { return [] }
        func ids(_ key: String) -> [UInt8] {
            let ids = (metadata[key]?.properties ?? []).compactMap { UInt8($0.name) }.filter { $0 > 0 }
            return Array(Set(ids)).sorted().prefix(mostTracks).map { $0 }
        }
        return ids(videoKey).map { "track\($0)" } + ids(audioKey).map { "audio\($0)" }
    }
}
