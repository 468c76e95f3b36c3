/// One rendition of an adaptive-bitrate ladder: a target height, video bit rate and an
/// optional frame-rate cap. The width follows from the source's aspect ratio.
public struct LadderRung: Sendable, Hashable, Codable {
    /// The rendition name: the last element of its address (`abr/demo/480p`) and of its bus
    /// subject, and its name in playlists.
    public var name: String
    /// Target picture height in pixels (rounded down to even when planned).
    public var height: Int
    /// Target video bit rate in bits per second (also the VBV maximum rate).
    public var videoBitRate: Int
    /// Frames per second above which pictures are dropped; nil keeps the source rate.
    public var maximumFrameRate: Double?

    public init(name: String, height: Int, videoBitRate: Int, maximumFrameRate: Double? = nil) {
        self.name = name
        self.height = height
        self.videoBitRate = videoBitRate
        self.maximumFrameRate = maximumFrameRate
    }
}

/// The renditions a source stream is transcoded into.
public struct Ladder: Sendable, Hashable, Codable {
    public var rungs: [LadderRung]

    public init(rungs: [LadderRung]) {
        self.rungs = rungs
    }

    /// 720p/2800k, 480p/1400k, 360p/800k, 240p/400k, at the source frame rate.
    public static let `default` = Ladder(rungs: [
        LadderRung(name: "720p", height: 720, videoBitRate: 2_800_000),
        LadderRung(name: "480p", height: 480, videoBitRate: 1_400_000),
        LadderRung(name: "360p", height: 360, videoBitRate: 800_000),
        LadderRung(name: "240p", height: 240, videoBitRate: 400_000),
    ])

    /// The rungs that apply to a source of `width`×`height`, with their picture sizes.
    ///
    /// - Rungs taller than the source are skipped (no upscaling); a rung of the source's
    ///   own height is kept (it re-encodes at the rung's bit rate).
    /// - The width keeps the source's aspect ratio, rounded to the nearest even number;
    ///   the height is rounded down to even (4:2:0 needs even sizes).
    /// - Rungs with a non-positive height or bit rate, or a duplicate name, are skipped.
    public func plan(sourceWidth: Int, sourceHeight: Int) -> [RungPlan] {
        guard sourceWidth > 0, sourceHeight > 0 else { return [] }
        var names = Set<String>()
        var plans: [RungPlan] = []
        for rung in rungs where rung.height > 0 && rung.height <= sourceHeight && rung.videoBitRate > 0 {
            guard names.insert(rung.name).inserted else { continue }
            let height = rung.height & ~1
            let exactWidth = Double(sourceWidth) * Double(height) / Double(sourceHeight)
            let width = max(2, Int((exactWidth / 2).rounded()) * 2)
            guard height >= 2 else { continue }
            plans.append(RungPlan(rung: rung, width: width, height: height))
        }
        return plans
    }
}

/// A rung resolved against a source: the picture size it is encoded at.
public struct RungPlan: Sendable, Hashable {
    public var rung: LadderRung
    public var width: Int
    public var height: Int

    public init(rung: LadderRung, width: Int, height: Int) {
        self.rung = rung
        self.width = width
        self.height = height
    }
}
