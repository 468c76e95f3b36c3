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
/// H.264 and AAC. Without one, a viewer that cannot decode the video is refused
/// (`NetStream.Play.Failed`): bytes it cannot decode help no one. One that decodes the video
/// but not the audio is sent the stream as published: the picture is worth more to it than
/// a refusal, and what it does with audio it does not know is its own (counted). So is a
/// play of a rendition without video (a multitrack publisher's other language): the
/// stream's other renditions are not the audio it asked for.
///
/// Such a play of a stream whose video codec is not known yet (the moment between a
/// publisher's start and its first sequence header, which an SRT publisher sends with its
/// first keyframe) waits for it, at most `codecWait`: a stream that has sent about 5 s of
/// audio and no video header is audio-only, and is not waited for.
public struct Playback: Sendable {
    public let registry: StreamRegistry
    private let logger: Logger
    /// How long a play that must be negotiated waits for a new stream's video codec.
    let codecWait: Duration

    public init(registry: StreamRegistry, logger: Logger = Logger(label: "estuary.playback"), codecWait: Duration = .seconds(2)) {
        self.registry = registry
        self.logger = logger
        self.codecWait = codecWait
    }

    /// Audio frames in about 5 s (AAC at 48 kHz, Opus at 20 ms), longer than encoders'
    /// keyframe intervals: a stream that sent this many and no video header is taken as
    /// audio-only.
    static let audioOnlyFrames = 240

    public func play(_ request: PlayRequest) async -> PlayDecision {
        guard let hub = await registry.resolve(request.path) else { return .refuse(.notFound("No such stream: \(request.path)")) }
        guard let codecs = request.codecs else { return .accept(hub: hub) }
        await awaitVideoCodec(of: hub)
        let (video, audio) = (hub.videoCodec, hub.audioCodec)
        let decodesVideo = video.map(codecs.video.decodes) ?? true
        let decodesAudio = audio.map(codecs.audio.decodes) ?? true
        guard !decodesVideo || !decodesAudio else { return .accept(hub: hub) }
        // What the client did not announce: the video codec, the audio one, or both.
        let unannounced = [decodesVideo ? nil : video?.fourCCString, decodesAudio ? nil : audio?.fourCCString]
            .compactMap { $0 }.joined(separator: " and ")
        let metadata: Logger.Metadata = [
            "stream": "\(request.path)", "from": "\(request.remoteAddress)", "codec": "\(unannounced)", "client": "\(codecs)",
        ]
        // Without video (an audio-only rendition, a multitrack publisher's other language;
        // or a stream whose video has not shown itself within the wait) another rendition's
        // picture and audio is not what was asked for: the audio as published, as for a
        // stream whose video the client decodes.
        guard video != nil else {
            logger.info("play of an audio codec the client did not announce, on a stream without video: sending it as published", metadata: metadata)
            Self.negotiated(outcome: "unannounced_audio")
            return .accept(hub: hub)
        }
        if let fallback = await registry.decodableRendition(of: hub.path.stream, for: codecs) {
            logger.info("play of a codec the client did not announce: sending \(fallback.path) instead", metadata: metadata)
            Self.negotiated(outcome: "fallback")
            return .accept(hub: fallback)
        }
        if decodesVideo {
            logger.info("play of an audio codec the client did not announce, and no rendition in one it did is live: sending the stream as published", metadata: metadata)
            Self.negotiated(outcome: "unannounced_audio")
            return .accept(hub: hub)
        }
        logger.notice("play refused: the client did not announce the stream's codec, and no rendition in one it did is live", metadata: metadata)
        Self.negotiated(outcome: "refused")
        return .refuse(.unavailable("\(request.path) is \(unannounced), which this client did not announce (fourCcList), and it has no rendition in H.264 and AAC"))
    }

    /// Returns once `hub`'s video codec is known, it has ended, it has sent about 5 s of audio
    /// without a video header, or `codecWait` has passed; polled (once per play of a new
    /// stream, never per frame).
    private func awaitVideoCodec(of hub: StreamHub) async {
        guard hub.videoCodec == nil else { return }
        let deadline = ContinuousClock.now + codecWait
        while hub.videoCodec == nil, !hub.isEnded, hub.statistics.audioFramesIn < Self.audioOnlyFrames, ContinuousClock.now < deadline {
            do {
                try await Task.sleep(for: .milliseconds(20))
            } catch {
                return
            }
        }
        Self.codecWaits.increment()
    }

    /// `estuary_play_codec_waits_total`: negotiated plays that waited for a new stream's
    /// video codec.
    static let codecWaits = Counter(label: "estuary_play_codec_waits_total")

    /// `estuary_play_codec_mismatches_total{outcome}`: plays of a codec the client did not
    /// announce, given another rendition (`fallback`), refused (`refused`, video it cannot
    /// decode), or sent as published (`unannounced_audio`, audio it did not announce).
    static func negotiated(outcome: String) {
        Counter(label: "estuary_play_codec_mismatches_total", dimensions: [("outcome", outcome)]).increment()
    }
}
