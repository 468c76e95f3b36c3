import Logging
import Media
import Metrics
import Session

/// Answers play requests, from any protocol, with the streams this process holds or (on a
/// relay) can mirror from the bus.
///
/// A viewer whose protocol said which codecs it decodes (RTMP's `connect`) and that cannot
/// decode the rendition it asked for (a legacy player of an HEVC or AV1 stream, or of Opus
/// audio) is given the stream's tallest rendition it can decode, a transcoder's rung in
/// H.264 and AAC, and otherwise refused (`NetStream.Play.Failed`): bytes it cannot decode
/// help no one.
public struct Playback: Sendable {
    public let registry: StreamRegistry
    private let logger: Logger

    public init(registry: StreamRegistry, logger: Logger = Logger(label: "estuary.playback")) {
        self.registry = registry
        self.logger = logger
    }

    public func play(_ request: PlayRequest) async -> PlayDecision {
        guard let hub = await registry.resolve(request.path) else { return .refuse(.notFound("No such stream: \(request.path)")) }
        guard let codecs = request.codecs else { return .accept(hub: hub) }
        let (video, audio) = (hub.videoCodec, hub.audioCodec)
        guard !codecs.decodes(video: video, audio: audio) else { return .accept(hub: hub) }
        // What the client did not announce: the video codec, the audio one, or both.
        let unannounced = [video.flatMap { codecs.video.decodes($0) ? nil : $0.fourCCString }, audio.flatMap { codecs.audio.decodes($0) ? nil : $0.fourCCString }]
            .compactMap { $0 }.joined(separator: " and ")
        let metadata: Logger.Metadata = [
            "stream": "\(request.path)", "from": "\(request.remoteAddress)", "codec": "\(unannounced)", "client": "\(codecs)",
        ]
        if let fallback = await registry.decodableRendition(of: hub.path.stream, for: codecs) {
            logger.info("play of a codec the client did not announce: sending \(fallback.path) instead", metadata: metadata)
            Self.negotiated(outcome: "fallback")
            return .accept(hub: fallback)
        }
        logger.notice("play refused: the client did not announce the stream's codec, and no rendition in one it did is live", metadata: metadata)
        Self.negotiated(outcome: "refused")
        return .refuse(.unavailable("\(request.path) is \(unannounced), which this client did not announce (fourCcList), and it has no rendition in H.264 and AAC"))
    }

    /// `estuary_play_codec_mismatches_total{outcome}`: plays of a codec the client did not
    /// announce, given another rendition (`fallback`) or refused.
    static func negotiated(outcome: String) {
        Counter(label: "estuary_play_codec_mismatches_total", dimensions: [("outcome", outcome)]).increment()
    }
}
