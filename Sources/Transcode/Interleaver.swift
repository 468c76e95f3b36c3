import Media

/// Keeps one rendition's output in timestamp order across tracks.
///
/// Copied audio is ready as soon as it arrives, while the video of the same instant leaves
/// the decoder and encoder later (B-frame reordering in the source, then the encode). An
/// audio frame is therefore held until the rendition's video has reached its timestamp,
/// so the rendition's frames go out interleaved by timestamp as a publisher would send
/// them (HLS muxers and players expect it). Audio never waits more than `maximumAudioLead`
/// milliseconds ahead of the video, so a stream whose video stalls (or has none) keeps
/// its sound.
struct Interleaver {
    let maximumAudioLead: Int64
    private var heldAudio: [MediaFrame] = []
    private(set) var lastVideoTimestamp: Int64?

    init(maximumAudioLead: Int64 = 1000) {
        self.maximumAudioLead = maximumAudioLead
    }

    /// Frames to publish now, in order, after an audio frame arrived.
    mutating func audio(_ frame: MediaFrame) -> [MediaFrame] {
        if frame.isSequenceHeader {
            // Configuration goes out at once, ahead of held frames that need it.
            return [frame]
        }
        if let lastVideoTimestamp, frame.timestamp <= lastVideoTimestamp, heldAudio.isEmpty {
            return [frame]
        }
        heldAudio.append(frame)
        var ready: [MediaFrame] = []
        while let first = heldAudio.first, frame.timestamp - first.timestamp > maximumAudioLead
            || (lastVideoTimestamp.map { first.timestamp <= $0 } ?? false) {
            ready.append(heldAudio.removeFirst())
        }
        return ready
    }

    /// Frames to publish now, in order, for a video frame (held audio up to its timestamp first).
    mutating func video(_ frame: MediaFrame) -> [MediaFrame] {
        var ready: [MediaFrame] = []
        if !frame.isSequenceHeader {
            let count = heldAudio.prefix { $0.timestamp <= frame.timestamp }.count
            ready.append(contentsOf: heldAudio.prefix(count))
            heldAudio.removeFirst(count)
            lastVideoTimestamp = max(lastVideoTimestamp ?? frame.timestamp, frame.timestamp)
        }
        ready.append(frame)
        return ready
    }

    /// Everything still held (end of stream).
    mutating func drain() -> [MediaFrame] {
        defer { heldAudio.removeAll() }
        return heldAudio
    }
}
