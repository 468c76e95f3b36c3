import LibAV
import Logging
import Media
import NIOCore

/// Turns a source's non-AAC audio into AAC for the renditions: decode (libavcodec),
/// resample to planar float at 44.1 or 48 kHz, mono or stereo (libswresample), encode
/// AAC-LC (libavcodec). HLS and most players accept only AAC, and one encode serves every
/// rung.
///
/// The output format is fixed by the first audio tag the source sends: 48 kHz when it
/// announces 48 kHz or more, else 44.1 kHz; stereo unless it announces mono. When a
/// reconnecting publisher sends another format, the decoder is reopened and the resampler
/// adapts, while the encoder (and so the renditions' AAC sequence header) stays the same.
///
/// Lives on the pipeline's worker thread; not Sendable.
final class AudioTranscoder {
    struct Statistics: Equatable {
        var framesIn = 0
        var corruptFrames = 0
        var framesOut = 0
        var unsupportedFrames = 0
    }

    private let bitRatePerChannel: Int
    private let logger: Logger
    private var decoder: AudioDecoder?
    private var resampler: AudioResampler?
    private(set) var encoder: AACEncoder?
    /// Whether the AAC sequence header of `encoder` has gone out.
    private var announced = false
    /// The codec configuration of an enhanced-RTMP SequenceStart (Opus, FLAC), by codec.
    private var configuration: (codec: AudioCodec, bytes: ByteBuffer)?
    private(set) var statistics = Statistics()

    init(bitRatePerChannel: Int, logger: Logger) {
        self.bitRatePerChannel = bitRatePerChannel
        self.logger = logger
    }

    /// AAC frames for `frame` (the first output is preceded by the AAC sequence header).
    /// A frame that cannot be decoded is counted and skipped.
    func transcode(_ frame: MediaFrame, header: AudioTagHeader) -> [MediaFrame] {
        if header.isSequenceHeader {
            // Enhanced-RTMP codec configuration: the next decoder opens with it.
            if let codec = header.codec,
               let bytes = frame.codecData(from: header.headerLength) {
                configuration = (codec, bytes)
                decoder = nil
            }
            return []
        }
        statistics.framesIn += 1
        guard let format = AudioDecoder.Format(header: header) else {
            statistics.unsupportedFrames += 1
            return []
        }
        var output: [MediaFrame] = []
        do {
            let (resampler, encoder) = try openEncoder(for: format)
            if !announced {
                // The AAC header goes out with the first source audio, ahead of the rung's
                // first keyframe, so that HLS opens the rendition with both tracks. It is
                // stamped no later than the encoder's priming frame, which comes 1024
                // samples before the input's first sample.
                let priming = Int64(1024 * 1000 / encoder.settings.sampleRate) + 1
                output.append(encoder.sequenceHeader(timestamp: max(0, frame.timestamp - priming)))
                announced = true
            }
            let decoder = try openDecoder(for: format, codec: header.codec)
            for samples in try decoder.decode(frame, headerLength: header.headerLength) {
                output += try encoder.encode(try resampler.convert(samples))
            }
            statistics.framesOut += output.count
            return output
        } catch {
            statistics.corruptFrames += 1
            if statistics.corruptFrames == 1 || statistics.corruptFrames % 100 == 0 {
                logger.warning("skipping audio that cannot be transcoded to AAC", metadata: [
                    "format": "\(format)", "error": "\(error)", "skipped_total": "\(statistics.corruptFrames)",
                ])
            }
            // The AAC header is announced once: when this frame was to carry it, the next
            // frame that decodes does instead (a rendition must not declare audio that never
            // comes, nor lose the header for good).
            if output.allSatisfy(\.isSequenceHeader) {
                announced = false
                return []
            }
            statistics.framesOut += output.count
            return output
        }
    }

    /// Whatever the encoder still holds.
    func flush() -> [MediaFrame] {
        guard let encoder else { return [] }
        let frames = (try? encoder.flush()) ?? []
        statistics.framesOut += frames.count
        return frames
    }

    private func openDecoder(for format: AudioDecoder.Format, codec: AudioCodec?) throws(AVError) -> AudioDecoder {
        if let decoder, decoder.format == format {
            return decoder
        }
        var bytes: ByteBuffer?
        if let configuration, configuration.codec == codec {
            bytes = configuration.bytes
        }
        let decoder = try AudioDecoder(format: format, configuration: bytes)
        logger.info("re-encoding the source's audio to AAC", metadata: ["source_audio": "\(format)"])
        self.decoder = decoder
        return decoder
    }

    /// The resampler and encoder, opened for the first source audio: the output format
    /// follows the rate and channels its tag header announces (the resampler converts
    /// whatever the decoder actually produces).
    private func openEncoder(for format: AudioDecoder.Format) throws(AVError) -> (AudioResampler, AACEncoder) {
        if let resampler, let encoder {
            return (resampler, encoder)
        }
        let rate = format.sampleRate >= 48000 ? 48000 : 44100
        let channels = format.channelCount == 1 ? 1 : 2
        let encoder = try AACEncoder(settings: .init(sampleRate: rate, channelCount: channels, bitRate: bitRatePerChannel * channels))
        let resampler = try AudioResampler(sampleRate: rate, channelCount: channels)
        self.encoder = encoder
        self.resampler = resampler
        announced = false
        return (resampler, encoder)
    }
}

@available(*, unavailable)
extension AudioTranscoder: Sendable {}
