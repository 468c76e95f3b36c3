/// Puts a publisher's 32-bit millisecond timestamps on one monotonic stream timeline.
///
/// Publishers send audio and video on clocks that jitter, wrap at 2^32 ms (about 49.7
/// days), jump when an encoder restarts, and start again at 0 when the publisher
/// reconnects. Viewers need per-track timestamps that never go backwards and audio and
/// video that stay aligned. The normalizer:
///
/// - unwraps 32-bit wrap-around: each input is placed within ±2^31 ms of the previous one;
/// - keeps one offset for the whole stream (never one per track), so a correction seen on
///   one track moves both and A/V sync is preserved;
/// - re-bases on a discontinuity: a frame that lands more than `jumpThreshold` away from
///   both its own track's previous output and the stream's latest output. The offset is
///   recomputed so the frame lands one typical frame duration after its track's previous
///   output. Requiring both distances means a sparse track that resumes after a pause
///   (video stopped while an app was backgrounded, audio still flowing) is not a jump, and
///   a constant skew between the audio and video clocks never makes the tracks fight;
/// - clamps small backward steps of a track (clock jitter) to that track's previous output;
/// - on `beginNewEpoch()` (publisher reconnect), continues just after the highest
///   timestamp output so far, whatever the new publisher starts at.
///
/// Script data (`onMetaData`) follows the stream: it takes the latest video output (or
/// audio if there is no video) and never moves the timeline, because encoders send it
/// with arbitrary timestamps (often 0 mid-stream).
///
/// A jump on one track only (a buggy encoder) cannot be reconciled with a single offset:
/// the tracks then rebase in turn and each frame lands one frame after its predecessor.
/// Output stays monotonic and aligned; `rebaseCount` rises, which is what to alert on.
public struct TimestampNormalizer: Sendable {
    /// A discontinuity is a move of more than this many milliseconds. The default, 1000 ms,
    /// is above the largest gaps real publishers produce in normal operation (A/V
    /// interleaving skew of a few hundred ms, frame drops on an overheating phone, 1 fps
    /// slideshows) and below what a viewer would sit through as a frozen picture.
    /// SRS uses 250 ms per track; a larger value is safe here because the check also
    /// requires the stream as a whole to have moved.
    public let jumpThreshold: Int64
    /// How many times the stream offset was recomputed, including at epoch starts. For metrics.
    public private(set) var rebaseCount = 0

    /// Per-track state.
    private struct Track: Sendable {
        var lastOutput: Int64?
        var lastInput: Int64?
        /// Smoothed inter-frame interval in 1/256 ms (fixed point, so the average can
        /// converge on the exact rate), used as the gap when re-basing.
        var scaledFrameDuration: Int64
        /// The smoothed inter-frame interval in whole milliseconds, at least 1.
        var frameDuration: Int64 { max(1, (scaledFrameDuration + 128) / 256) }

        init(frameDuration: Int64) {
            scaledFrameDuration = frameDuration * 256
        }
        /// False until the track's first frame of the current epoch: a track's first frame
        /// has no own history to jump from.
        var seenInEpoch = false
    }

    /// Added to the unwrapped input to get the output.
    private var offset: Int64 = 0
    /// The unwrapped input of the latest audio or video frame: the reference for unwrapping.
    private var lastInput: Int64?
    /// The output of the latest audio or video frame.
    private var lastOutput: Int64?
    private var highestOutput: Int64?
    private var epochPending = false
    // 30 fps and 1024-sample AAC at 44.1 kHz, until the tracks show their own rates.
    private var video = Track(frameDuration: 33)
    private var audio = Track(frameDuration: 23)

    /// - Parameter jumpThreshold: see `jumpThreshold`; values below 1 are raised to 1.
    public init(jumpThreshold: Int64 = 1000) {
        self.jumpThreshold = max(1, jumpThreshold)
    }

    /// Makes the next frame on any track continue the timeline just after the highest
    /// timestamp output so far (plus one frame duration), whatever its input timestamp.
    /// Call it when a new publisher takes over the stream.
    public mutating func beginNewEpoch() {
        guard highestOutput != nil else { return }
        epochPending = true
    }

    /// Makes the next frame continue a timeline whose newest frame is at `timestamp` (a
    /// stream this node takes over from another, whose timeline the cluster's viewers are
    /// on), as `beginNewEpoch` continues this one's.
    public mutating func continueAfter(_ timestamp: Int64) {
        highestOutput = max(highestOutput ?? timestamp, timestamp)
        epochPending = true
    }

    /// Maps a publisher timestamp (ms) of a frame of `kind` to the stream timeline (ms).
    public mutating func normalize(_ timestamp: UInt32, kind: MediaKind) -> Int64 {
        switch kind {
        case .video:
            var track = video
            let output = normalize(timestamp, track: &track)
            video = track
            return output
        case .audio:
            var track = audio
            let output = normalize(timestamp, track: &track)
            audio = track
            return output
        case .script:
            if let output = video.lastOutput ?? audio.lastOutput {
                return output
            }
            return unwrap(timestamp) + offset
        }
    }

    /// Maps a timestamp of another track of the same publisher (a multitrack publisher's
    /// added track, whose frames go to a hub of their own) onto this timeline, with the
    /// stream's offset, so that the track stays in step with the stream's own audio and
    /// video, whenever it started. The track moves nothing but the start of an epoch (and
    /// the highest output, where the next epoch continues), and its frames are not the
    /// unwrapping reference. A track frame more than `jumpThreshold` from the stream's latest
    /// output (a jump the stream's own next frame will re-base, or the track's own) is put at
    /// that latest output: placed ahead, it would hold the track's later frames back for as
    /// long as the jump.
    public mutating func follow(_ timestamp: UInt32) -> Int64 {
        if epochPending, let highest = highestOutput {
            // The epoch's first frame, whichever track it is on, places the new clock.
            epochPending = false
            let input = Int64(timestamp)
            offset = highest + video.frameDuration - input
            rebaseCount += 1
            video.seenInEpoch = false
            audio.seenInEpoch = false
            lastInput = input
            highestOutput = max(highestOutput ?? input + offset, input + offset)
            return input + offset
        }
        let output = unwrap(timestamp) + offset
        if let latest = lastOutput, distance(output, latest) > jumpThreshold { return latest }
        highestOutput = max(highestOutput ?? output, output)
        return output
    }

    /// Takes `timestamp`, already on a stream timeline (from another hub's `follow`), as it
    /// is, but never behind the track's previous frame. A new epoch is counted as a re-base
    /// (its next frame is a discontinuity) and moves nothing.
    public mutating func place(_ timestamp: Int64, kind: MediaKind) -> Int64 {
        if epochPending {
            epochPending = false
            rebaseCount += 1
        }
        let output: Int64
        switch kind {
        case .video:
            output = max(timestamp, video.lastOutput ?? timestamp)
            video.lastOutput = output
        case .audio:
            output = max(timestamp, audio.lastOutput ?? timestamp)
            audio.lastOutput = output
        case .script:
            return video.lastOutput ?? audio.lastOutput ?? timestamp
        }
        lastOutput = output
        highestOutput = max(highestOutput ?? output, output)
        return output
    }

    /// Places a 32-bit timestamp within ±2^31 of the previous audio/video input.
    private func unwrap(_ timestamp: UInt32) -> Int64 {
        guard let reference = lastInput else { return Int64(timestamp) }
        let step = Int32(bitPattern: timestamp &- UInt32(truncatingIfNeeded: reference))
        return reference + Int64(step)
    }

    /// `track` is a copy of `video` or `audio`, written back by the caller.
    private mutating func normalize(_ timestamp: UInt32, track: inout Track) -> Int64 {
        var input: Int64
        var output: Int64
        var rebased = false
        if epochPending, let highest = highestOutput {
            // A new publisher's clock has nothing to do with the old one's: no unwrapping.
            epochPending = false
            input = Int64(timestamp)
            offset = highest + track.frameDuration - input
            rebaseCount += 1
            rebased = true
            video.seenInEpoch = false
            audio.seenInEpoch = false
            track.seenInEpoch = false
            output = input + offset
        } else {
            input = unwrap(timestamp)
            output = input + offset
            if track.seenInEpoch, let trackLast = track.lastOutput, let streamLast = lastOutput,
               distance(output, trackLast) > jumpThreshold, distance(output, streamLast) > jumpThreshold {
                offset = trackLast + track.frameDuration - input
                output = input + offset
                rebaseCount += 1
                rebased = true
            }
        }

        if !rebased, track.seenInEpoch, let previousInput = track.lastInput {
            let interval = input - previousInput
            if interval > 0, interval <= jumpThreshold {
                // Exponential average with weight 1/4: follows a rate change within a few
                // frames while ignoring single-frame jitter.
                track.scaledFrameDuration += (interval * 256 - track.scaledFrameDuration) / 4
            }
        }
        if let trackLast = track.lastOutput, output < trackLast {
            output = trackLast
        }

        track.lastInput = input
        track.lastOutput = output
        track.seenInEpoch = true
        lastInput = input
        lastOutput = output
        highestOutput = max(highestOutput ?? output, output)
        return output
    }

    private func distance(_ a: Int64, _ b: Int64) -> Int64 {
        a > b ? a - b : b - a
    }
}
