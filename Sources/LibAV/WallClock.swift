import CFFmpeg

/// Wall-clock time (for EXT-X-PROGRAM-DATE-TIME and the like), from libavutil so that the
/// media modules need neither Foundation nor platform headers.
public enum WallClock {
    /// Seconds since 1970-01-01 UTC.
    public static func now() -> Double {
        Double(av_gettime()) / 1_000_000
    }
}
