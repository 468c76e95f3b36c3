import AMF0
import Media
import NIOCore

/// The `onMetaData` a rendition's viewers receive: the rung's own picture size, frame rate
/// and bit rates, not the source's (which the pipeline never forwards). Players such as
/// flv.js and VLC size their surfaces and bitrate displays from it; HLS does not use it.
enum RenditionMetadata {
    /// A script frame `onMetaData` + ECMA array at `timestamp`.
    static func frame(
        width: Int,
        height: Int,
        frameRate: Double,
        videoBitRate: Int,
        audio: AudioSpecificConfig?,
        audioBitRate: Int?,
        timestamp: Int64
    ) -> MediaFrame {
        var properties: [AMF0Property] = [
            AMF0Property("duration", .number(0)),
            AMF0Property("width", .number(Double(width))),
            AMF0Property("height", .number(Double(height))),
            AMF0Property("framerate", .number(frameRate)),
            AMF0Property("videocodecid", .number(7)),
            AMF0Property("videodatarate", .number(Double(videoBitRate) / 1000)),
        ]
        if let audio {
            properties += [
                AMF0Property("audiocodecid", .number(10)),
                AMF0Property("audiosamplerate", .number(Double(audio.sampleRate))),
                AMF0Property("audiosamplesize", .number(16)),
                AMF0Property("stereo", .boolean(audio.channelCount >= 2)),
            ]
            if let audioBitRate {
                properties.append(AMF0Property("audiodatarate", .number(Double(audioBitRate) / 1000)))
            }
        }
        properties.append(AMF0Property("encoder", .string("Estuary")))
        var payload = ByteBuffer()
        // A data message body (RTMP type 18, FLV script tag): the handler name, then the array.
        AMF0Encoder().encode([.string("onMetaData"), .ecmaArray(properties)], into: &payload)
        return MediaFrame(kind: .script, timestamp: timestamp, payload: payload)
    }

    /// The AudioSpecificConfig of an AAC sequence header frame, if it is one.
    static func audioConfiguration(of frame: MediaFrame?) -> AudioSpecificConfig? {
        guard let frame, frame.kind == .audio, let header = try? frame.audioTagHeader(), header.codec == .aac, header.isSequenceHeader,
              let bytes = frame.codecData(from: header.headerLength)
        else { return nil }
        return try? AudioSpecificConfig(from: bytes)
    }
}
