import Foundation
import Synchronization
import Testing

// MARK: - Playlists

/// An `#EXT-X-…:A=1,B="x,y"` attribute list.
struct M3U8Attributes: Equatable {
    var values: [String: String] = [:]

    /// Parses `NAME=value` pairs separated by commas; quoted values keep their commas (quotes removed).
    init(_ text: Substring) {
        var index = text.startIndex
        while index < text.endIndex {
            guard let equals = text[index...].firstIndex(of: "=") else { break }
            let name = text[index..<equals].trimmingCharacters(in: .whitespaces)
            var cursor = text.index(after: equals)
            var value = ""
            if cursor < text.endIndex, text[cursor] == "\"" {
                cursor = text.index(after: cursor)
                let close = text[cursor...].firstIndex(of: "\"") ?? text.endIndex
                value = String(text[cursor..<close])
                cursor = close < text.endIndex ? text.index(after: close) : close
                if cursor < text.endIndex, text[cursor] == "," { cursor = text.index(after: cursor) }
            } else {
                let comma = text[cursor...].firstIndex(of: ",") ?? text.endIndex
                value = String(text[cursor..<comma])
                cursor = comma < text.endIndex ? text.index(after: comma) : comma
            }
            self.values[name] = value
            index = cursor
        }
    }

    subscript(_ name: String) -> String? { self.values[name] }
    func double(_ name: String) -> Double? { self.values[name].flatMap(Double.init) }
    func int(_ name: String) -> Int? { self.values[name].flatMap { Int($0) } }
}

/// A media playlist as a player reads it.
struct MediaPlaylist {
    struct Part: Equatable {
        var duration: Double
        var uri: String
        var independent: Bool
    }

    struct Segment {
        var sequence: Int
        /// nil for the open (incomplete) segment whose parts are listed after the last EXTINF.
        var duration: Double?
        var uri: String?
        var discontinuity: Bool
        /// The EXT-X-MAP in force.
        var map: String?
        var parts: [Part]
    }

    /// The playlist with the session query taken off every URI (`HLSQueries`).
    var text: String
    /// The queries the URIs carried (a session: one value, the same on every URI).
    var uriQueries: Set<String> = []
    var version: Int?
    var targetDuration: Int?
    var mediaSequence: Int?
    var discontinuitySequence = 0
    var serverControl: M3U8Attributes?
    var partTarget: Double?
    var segments: [Segment] = []
    var preloadHint: M3U8Attributes?
    var renditionReports: [M3U8Attributes] = []
    var endList = false
    /// Lines the parser did not understand.
    var unknownTags: [String] = []

    var complete: [Segment] { self.segments.filter { $0.duration != nil } }
    var maps: [String] { self.text.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-MAP:") }.map(String.init) }
    var discontinuityCount: Int { self.segments.filter(\.discontinuity).count }

    /// The last listed part, as (segment sequence, part index).
    var lastPart: (sequence: Int, index: Int)? {
        guard let segment = self.segments.last(where: { !$0.parts.isEmpty }) else { return nil }
        return (segment.sequence, segment.parts.count - 1)
    }

    /// Parses a media playlist; throws when it does not start with #EXTM3U. The URIs are
    /// kept without their query (`uriQueries`).
    static func parse(_ raw: String) throws -> MediaPlaylist {
        let (text, queries) = HLSQueries.strip(raw)
        var playlist = MediaPlaylist(text: text)
        playlist.uriQueries = queries
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) }
        guard lines.first == "#EXTM3U" else { throw IntegrationFailure("playlist does not start with #EXTM3U:\n\(text.prefix(300))") }
        var pendingParts: [Part] = []
        var pendingDiscontinuity = false
        var pendingDuration: Double?
        var map: String?
        var sequence: Int?
        func value(_ line: String, _ tag: String) -> Substring { line.dropFirst(tag.count) }
        for line in lines.dropFirst() {
            if line.hasPrefix("#EXT-X-VERSION:") {
                playlist.version = Int(value(line, "#EXT-X-VERSION:"))
            } else if line.hasPrefix("#EXT-X-TARGETDURATION:") {
                playlist.targetDuration = Int(value(line, "#EXT-X-TARGETDURATION:"))
            } else if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") {
                playlist.mediaSequence = Int(value(line, "#EXT-X-MEDIA-SEQUENCE:"))
                sequence = playlist.mediaSequence
            } else if line.hasPrefix("#EXT-X-DISCONTINUITY-SEQUENCE:") {
                playlist.discontinuitySequence = Int(value(line, "#EXT-X-DISCONTINUITY-SEQUENCE:")) ?? -1
            } else if line.hasPrefix("#EXT-X-SERVER-CONTROL:") {
                playlist.serverControl = M3U8Attributes(value(line, "#EXT-X-SERVER-CONTROL:"))
            } else if line.hasPrefix("#EXT-X-PART-INF:") {
                playlist.partTarget = M3U8Attributes(value(line, "#EXT-X-PART-INF:")).double("PART-TARGET")
            } else if line.hasPrefix("#EXT-X-MAP:") {
                map = M3U8Attributes(value(line, "#EXT-X-MAP:"))["URI"]
            } else if line == "#EXT-X-DISCONTINUITY" {
                pendingDiscontinuity = true
            } else if line.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") || line == "#EXT-X-INDEPENDENT-SEGMENTS" {
                continue
            } else if line.hasPrefix("#EXT-X-PART:") {
                let attributes = M3U8Attributes(value(line, "#EXT-X-PART:"))
                pendingParts.append(Part(duration: attributes.double("DURATION") ?? -1, uri: attributes["URI"] ?? "", independent: attributes["INDEPENDENT"] == "YES"))
            } else if line.hasPrefix("#EXTINF:") {
                pendingDuration = Double(value(line, "#EXTINF:").split(separator: ",", omittingEmptySubsequences: false).first ?? "")
            } else if line.hasPrefix("#EXT-X-PRELOAD-HINT:") {
                playlist.preloadHint = M3U8Attributes(value(line, "#EXT-X-PRELOAD-HINT:"))
            } else if line.hasPrefix("#EXT-X-RENDITION-REPORT:") {
                playlist.renditionReports.append(M3U8Attributes(value(line, "#EXT-X-RENDITION-REPORT:")))
            } else if line == "#EXT-X-ENDLIST" {
                playlist.endList = true
            } else if line.hasPrefix("#") {
                playlist.unknownTags.append(line)
            } else {
                // A segment URI closes a segment.
                let number = sequence ?? -1
                playlist.segments.append(Segment(sequence: number, duration: pendingDuration ?? -1, uri: line, discontinuity: pendingDiscontinuity, map: map, parts: pendingParts))
                sequence = number + 1
                pendingParts = []
                pendingDiscontinuity = false
                pendingDuration = nil
            }
        }
        if !pendingParts.isEmpty {
            playlist.segments.append(Segment(sequence: sequence ?? -1, duration: nil, uri: nil, discontinuity: pendingDiscontinuity, map: map, parts: pendingParts))
        }
        return playlist
    }
}

/// A master (multivariant) playlist.
struct MasterPlaylist {
    struct Variant {
        var attributes: M3U8Attributes
        var uri: String
    }

    /// Without the session query on the variant URIs (`uriQueries`).
    var text: String
    var uriQueries: Set<String> = []
    var variants: [Variant] = []

    static func parse(_ raw: String) throws -> MasterPlaylist {
        let (text, queries) = HLSQueries.strip(raw)
        var playlist = MasterPlaylist(text: text)
        playlist.uriQueries = queries
        let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        guard lines.first == "#EXTM3U" else { throw IntegrationFailure("master playlist does not start with #EXTM3U:\n\(text.prefix(300))") }
        var pending: M3U8Attributes?
        for line in lines.dropFirst() {
            if line.hasPrefix("#EXT-X-STREAM-INF:") {
                pending = M3U8Attributes(line.dropFirst("#EXT-X-STREAM-INF:".count))
            } else if !line.hasPrefix("#"), !line.isEmpty, let attributes = pending {
                playlist.variants.append(Variant(attributes: attributes, uri: line))
                pending = nil
            }
        }
        return playlist
    }
}

// MARK: - The checker

/// The rules of RFC 8216 / draft-pantos-hls-rfc8216bis that a player relies on, as pure
/// functions returning every violation found (empty: the playlist is fine).
enum HLSPlaylistChecker {
    /// Playlists carry durations with millisecond precision: comparisons allow that much.
    static let rounding = 0.0015

    enum Variant {
        case transportStream
        case lowLatency
    }

    /// One media playlist on its own.
    static func check(_ playlist: MediaPlaylist, variant: Variant) -> [String] {
        var problems: [String] = []
        guard let target = playlist.targetDuration, target > 0 else { return ["no valid #EXT-X-TARGETDURATION"] }
        guard let first = playlist.mediaSequence, first >= 0 else { return ["no valid #EXT-X-MEDIA-SEQUENCE"] }
        if !playlist.unknownTags.isEmpty { problems.append("unknown tags: \(playlist.unknownTags)") }
        if playlist.segments.isEmpty { problems.append("no segments") }
        for (offset, segment) in playlist.segments.enumerated() where segment.sequence != first + offset {
            problems.append("segment \(offset) has sequence \(segment.sequence), expected \(first + offset)")
        }
        let expectedSuffix = variant == .transportStream ? ".ts" : ".m4s"
        for segment in playlist.segments {
            if let uri = segment.uri, uri != "seg\(segment.sequence)\(expectedSuffix)" {
                problems.append("segment \(segment.sequence) has URI \(uri), expected seg\(segment.sequence)\(expectedSuffix)")
            }
            if let duration = segment.duration {
                // RFC 8216 4.3.3.1: EXTINF rounded to the nearest integer ≤ target duration.
                if duration <= 0 || Int(duration.rounded()) > target {
                    problems.append("seg\(segment.sequence): EXTINF \(duration) (rounded) exceeds EXT-X-TARGETDURATION \(target)")
                }
            }
        }
        let openSegments = playlist.segments.filter { $0.duration == nil }
        if openSegments.count > (variant == .lowLatency ? 1 : 0) || (openSegments.first.map { $0.sequence != playlist.segments.last?.sequence } ?? false) {
            problems.append("incomplete segments \(openSegments.map(\.sequence)) (only the last one, and only in LL-HLS, may be open)")
        }

        switch variant {
        case .transportStream:
            if playlist.version.map({ $0 < 3 }) ?? true { problems.append("EXT-X-VERSION \(playlist.version ?? 0) < 3") }
            if playlist.serverControl != nil || playlist.partTarget != nil || playlist.preloadHint != nil || playlist.segments.contains(where: { !$0.parts.isEmpty }) {
                problems.append("LL-HLS tags in the classic playlist")
            }
            if !playlist.maps.isEmpty { problems.append("EXT-X-MAP in an MPEG-TS playlist") }
        case .lowLatency:
            problems += checkLowLatency(playlist, target: Double(target))
        }
        return problems
    }

    private static func checkLowLatency(_ playlist: MediaPlaylist, target: Double) -> [String] {
        var problems: [String] = []
        if playlist.version.map({ $0 < 6 }) ?? true { problems.append("EXT-X-VERSION \(playlist.version ?? 0) too old for LL-HLS") }
        guard let partTarget = playlist.partTarget, partTarget > 0 else { return problems + ["no valid #EXT-X-PART-INF:PART-TARGET"] }
        guard let control = playlist.serverControl else { return problems + ["no #EXT-X-SERVER-CONTROL"] }
        if control["CAN-BLOCK-RELOAD"] != "YES" { problems.append("SERVER-CONTROL without CAN-BLOCK-RELOAD=YES: \(control.values)") }
        if let holdBack = control.double("PART-HOLD-BACK") {
            if holdBack + rounding < 3 * partTarget { problems.append("PART-HOLD-BACK \(holdBack) < 3 × PART-TARGET \(partTarget)") }
        } else {
            problems.append("SERVER-CONTROL without PART-HOLD-BACK: \(control.values)")
        }
        if partTarget > target { problems.append("PART-TARGET \(partTarget) exceeds the target duration \(target)") }
        if playlist.segments.first?.map == nil { problems.append("no EXT-X-MAP before the first segment") }
        for segment in playlist.segments where segment.map.map({ !$0.hasPrefix("init") || !$0.hasSuffix(".mp4") }) ?? false {
            problems.append("seg\(segment.sequence): EXT-X-MAP URI \(segment.map ?? "")")
        }
        for segment in playlist.segments {
            for (index, part) in segment.parts.enumerated() {
                if part.uri != "part\(segment.sequence).\(index).m4s" {
                    problems.append("part \(index) of segment \(segment.sequence) has URI \(part.uri)")
                }
                if part.duration <= 0 || part.duration > partTarget + rounding {
                    problems.append("\(part.uri): DURATION \(part.duration) exceeds PART-TARGET \(partTarget)")
                }
                // rfc8216bis 4.4.4.9: at least 85% of PART-TARGET, except independent parts and a segment's last part.
                let isLast = index == segment.parts.count - 1
                if !part.independent, !isLast, part.duration + rounding < 0.85 * partTarget {
                    problems.append("\(part.uri): DURATION \(part.duration) is under 85% of PART-TARGET \(partTarget)")
                }
            }
            if let first = segment.parts.first, !first.independent {
                problems.append("\(first.uri): the first part of a segment (cut at a keyframe) is not INDEPENDENT=YES")
            }
            if let duration = segment.duration, !segment.parts.isEmpty {
                let sum = segment.parts.reduce(0) { $0 + $1.duration }
                if abs(sum - duration) > 0.005 * Double(segment.parts.count) + 0.002 {
                    problems.append("seg\(segment.sequence): parts add up to \(sum) s, EXTINF says \(duration) s")
                }
            }
        }
        // Parts must be listed for the segments near the live edge (at least the open one).
        if !playlist.endList, let last = playlist.segments.last, last.parts.isEmpty {
            problems.append("no EXT-X-PART for the last segment \(last.sequence)")
        }
        if playlist.endList {
            if playlist.preloadHint != nil { problems.append("PRELOAD-HINT after EXT-X-ENDLIST") }
        } else if let hint = playlist.preloadHint, let last = playlist.segments.last {
            let expected = last.duration == nil ? "part\(last.sequence).\(last.parts.count).m4s" : "part\(last.sequence + 1).0.m4s"
            if hint["TYPE"] != "PART" || hint["URI"] != expected {
                problems.append("PRELOAD-HINT \(hint.values), expected TYPE=PART,URI=\"\(expected)\" (the part after the last listed one)")
            }
        } else {
            problems.append("no #EXT-X-PRELOAD-HINT in a live LL-HLS playlist")
        }
        return problems
    }

    /// A later poll of the same playlist against an earlier one.
    static func checkProgress(from earlier: MediaPlaylist, to later: MediaPlaylist) -> [String] {
        var problems: [String] = []
        guard let before = earlier.mediaSequence, let after = later.mediaSequence else { return ["no media sequence"] }
        if after < before { problems.append("EXT-X-MEDIA-SEQUENCE went back from \(before) to \(after)") }
        if later.discontinuitySequence < earlier.discontinuitySequence {
            problems.append("EXT-X-DISCONTINUITY-SEQUENCE went back from \(earlier.discontinuitySequence) to \(later.discontinuitySequence)")
        }
        // A segment present in both polls is the same segment (same duration once complete).
        let earlierComplete = Dictionary(earlier.complete.map { ($0.sequence, $0) }, uniquingKeysWith: { first, _ in first })
        for segment in later.complete {
            if let old = earlierComplete[segment.sequence], old.duration != segment.duration {
                problems.append("seg\(segment.sequence) changed duration from \(old.duration ?? 0) to \(segment.duration ?? 0)")
            }
        }
        // The later window starts no later than one past the earlier window's end: no segment skipped unseen.
        if let lastEarlier = earlier.segments.last?.sequence, after > lastEarlier + 1 {
            problems.append("media sequence jumped from a window ending at \(lastEarlier) to one starting at \(after)")
        }
        return problems
    }

    /// The expected RFC 6381 CODECS of a stream.
    struct ExpectedVariant {
        var codecs: String
        var width: Int?
        var height: Int?
        var frameRate: Double?
    }

    /// A master playlist with exactly one `src` variant whose attributes match.
    static func checkMaster(_ master: MasterPlaylist, mediaPlaylist: String, expected: ExpectedVariant) -> [String] {
        var problems: [String] = []
        if !master.text.hasPrefix("#EXTM3U") { problems.append("no #EXTM3U") }
        guard master.variants.count == 1, let variant = master.variants.first else {
            return ["expected one variant, found \(master.variants.count):\n\(master.text)"]
        }
        let attributes = variant.attributes
        if variant.uri != "src/\(mediaPlaylist)" { problems.append("variant URI \(variant.uri), expected src/\(mediaPlaylist)") }
        let bandwidth = attributes.int("BANDWIDTH") ?? 0
        let average = attributes.int("AVERAGE-BANDWIDTH") ?? 0
        if bandwidth <= 0 { problems.append("BANDWIDTH missing or not positive: \(attributes.values)") }
        if average <= 0 { problems.append("AVERAGE-BANDWIDTH missing or not positive: \(attributes.values)") }
        if average > bandwidth { problems.append("AVERAGE-BANDWIDTH \(average) > BANDWIDTH \(bandwidth)") }
        if attributes["CODECS"] != expected.codecs { problems.append("CODECS \(attributes["CODECS"] ?? "missing"), expected \(expected.codecs)") }
        if let width = expected.width, let height = expected.height {
            if attributes["RESOLUTION"] != "\(width)x\(height)" { problems.append("RESOLUTION \(attributes["RESOLUTION"] ?? "missing"), expected \(width)x\(height)") }
        } else if attributes["RESOLUTION"] != nil {
            problems.append("RESOLUTION \(attributes["RESOLUTION"] ?? "") in a stream without video")
        }
        if let frameRate = expected.frameRate {
            if let listed = attributes.double("FRAME-RATE") {
                if abs(listed - frameRate) > 0.5 { problems.append("FRAME-RATE \(listed), expected \(frameRate)") }
            } else {
                problems.append("FRAME-RATE missing: \(attributes.values)")
            }
        } else if attributes["FRAME-RATE"] != nil {
            problems.append("FRAME-RATE in a stream without video")
        }
        return problems
    }
}

// MARK: - Expected codec strings from a clip

extension MediaFile {
    /// The RFC 6381 codec strings of this clip, read from its FLV sequence headers:
    /// `avc1.PPCCLL` from the AVCDecoderConfigurationRecord, `mp4a.40.N` from the AudioSpecificConfig.
    func codecStrings() throws -> [String] {
        let flv = FLVStream.parse(Array(try Data(contentsOf: self.url)))
        var codecs: [String] = []
        if let avc = flv.tags.first(where: \.isAVCSequenceHeader) {
            let record = Array(avc.data.dropFirst(5))
            guard record.count >= 4 else { throw IntegrationFailure("short AVC sequence header in \(self.url.path)") }
            codecs.append("avc1." + record[1...3].map { String(format: "%02x", $0) }.joined())
        }
        if let aac = flv.tags.first(where: \.isAACSequenceHeader) {
            let config = Array(aac.data.dropFirst(2))
            guard let first = config.first else { throw IntegrationFailure("empty AAC sequence header in \(self.url.path)") }
            codecs.append("mp4a.40.\(first >> 3)")
        }
        return codecs
    }
}

// MARK: - Fetching and decoding

extension Scenario {
    /// GET `path` on the node; records nothing, throws on transport errors.
    func hlsGet(_ node: NodeProcess, _ path: String, timeout: Duration = .seconds(5)) async throws -> HTTPResponse {
        try await HTTPClient.get(port: node.httpPort, path: path, timeout: timeout)
    }

    /// GET a playlist that must answer 200; parses it.
    func mediaPlaylist(_ node: NodeProcess, _ path: String) async throws -> MediaPlaylist {
        let response = try await self.hlsGet(node, path)
        try self.require(response.status == 200, "GET \(path) answered \(response.status)")
        return try MediaPlaylist.parse(response.bodyText)
    }

    /// Waits (bounded) until the stream's LL-HLS media playlist lists `count` complete segments.
    @discardableResult
    func waitForSegments(
        _ node: NodeProcess,
        _ base: String,
        count: Int,
        timeout: Duration = .seconds(15),
        until condition: (MediaPlaylist) -> Bool = { _ in true }
    ) async throws -> MediaPlaylist {
        var last: MediaPlaylist?
        let ready = await eventually(timeout: timeout, interval: .milliseconds(200)) {
            guard let response = try? await self.hlsGet(node, "\(base)/src/llhls.m3u8"), response.status == 200,
                  let playlist = try? MediaPlaylist.parse(response.bodyText) else { return false }
            last = playlist
            return playlist.complete.count >= count && condition(playlist)
        }
        try self.require(ready, "\(base): the LL-HLS playlist did not get \(count)+ complete segments (and the awaited state) within \(timeout); last playlist:\n\(last?.text ?? "none")")
        return last!
    }

    /// Downloads resources (concatenated in order) into a file of the scenario's directory; every GET must answer 200.
    func download(_ node: NodeProcess, _ paths: [String], to name: String) async throws -> URL {
        var bytes: [UInt8] = []
        for path in paths {
            let response = try await self.hlsGet(node, path)
            try self.require(response.status == 200, "GET \(path) answered \(response.status)")
            try self.require(!response.body.isEmpty, "GET \(path) returned an empty body")
            bytes += response.body
        }
        let url = self.file(name)
        try Data(bytes).write(to: url)
        return url
    }

    /// `ffmpeg -v error -i INPUT [-t seconds] -f null -`: decodes everything (bounded).
    func decodeWithFFmpeg(_ input: String, seconds: Int? = nil, name: String, timeout: Duration = .seconds(30)) async throws -> ToolRun {
        var arguments = ["-nostdin", "-hide_banner", "-v", "error", "-i", input]
        if let seconds { arguments += ["-t", String(seconds)] }
        arguments += ["-f", "null", "-"]
        return try await self.run("ffmpeg", arguments, name: name, timeout: timeout)
    }

    /// ffprobe's streams (codec, profile, level, size, sample rate, start time) of a file or URL.
    func probeStreams(_ input: String, name: String, timeout: Duration = .seconds(20)) async throws -> (ToolRun, ProbeReport?) {
        let run = try await self.run(
            "ffprobe",
            ["-v", "error", "-show_entries", "stream=index,codec_type,codec_name,profile,level,width,height,sample_rate,channels", "-of", "json", input],
            name: name,
            timeout: timeout
        )
        return (run, run.succeeded ? try? ProbeReport.decode(run.stdout) : nil)
    }

    /// Presentation times (seconds) of every packet of one stream type of a file, in decode order.
    func packetTimes(_ file: URL, stream: String, name: String) async throws -> [(pts: Double, dts: Double)] {
        let run = try await self.run(
            "ffprobe",
            ["-v", "error", "-select_streams", stream == "video" ? "v:0" : "a:0", "-show_entries", "packet=pts_time,dts_time", "-of", "csv=p=0", file.path],
            name: name,
            timeout: .seconds(20)
        )
        try self.require(run.succeeded, "\(name): \(run)")
        return run.stdout.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let pts = Double(fields[0]), let dts = Double(fields[1]) else { return nil }
            return (pts, dts)
        }
    }
}

// MARK: - Polling both media playlists

/// Polls a stream's classic and LL-HLS media playlists in the background and keeps every
/// distinct version, for the checker to go over afterwards.
final class PlaylistRecorder: Sendable {
    struct Poll: Sendable {
        var variant: HLSPlaylistChecker.Variant
        var playlist: MediaPlaylist
    }

    private let polls = Mutex<[Poll]>([])
    private let failures = Mutex<[String]>([])

    /// Starts polling `base/src/{index,llhls}.m3u8` every `interval`; cancel the task to stop.
    func start(_ scenario: Scenario, _ node: NodeProcess, base: String, interval: Duration = .milliseconds(250)) -> Task<Void, Never> {
        Task {
            while !Task.isCancelled {
                for (variant, file) in [(HLSPlaylistChecker.Variant.transportStream, "index.m3u8"), (.lowLatency, "llhls.m3u8")] {
                    do {
                        let response = try await scenario.hlsGet(node, "\(base)/src/\(file)", timeout: .seconds(3))
                        guard response.status == 200 else {
                            self.failures.withLock { $0.append("GET \(base)/src/\(file) answered \(response.status)") }
                            continue
                        }
                        let playlist = try MediaPlaylist.parse(response.bodyText)
                        self.polls.withLock { polls in
                            if polls.last(where: { $0.variant == variant })?.playlist.text != playlist.text {
                                polls.append(Poll(variant: variant, playlist: playlist))
                            }
                        }
                    } catch {
                        self.failures.withLock { $0.append("GET \(base)/src/\(file): \(error)") }
                    }
                }
                try? await Task.sleep(for: interval)
            }
        }
    }

    func playlists(_ variant: HLSPlaylistChecker.Variant) -> [MediaPlaylist] {
        self.polls.withLock { $0.filter { $0.variant == variant }.map(\.playlist) }
    }

    var errors: [String] { self.failures.withLock { $0 } }
}

extension HLSPlaylistChecker.Variant: CustomStringConvertible {
    var description: String { self == .transportStream ? "classic" : "LL-HLS" }
}

extension Scenario {
    /// Applies the checker to one playlist and records what it finds.
    @discardableResult
    func checkPlaylist(_ playlist: MediaPlaylist, variant: HLSPlaylistChecker.Variant, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let problems = HLSPlaylistChecker.check(playlist, variant: variant)
        return self.check(problems.isEmpty, "\(label) violates the rules:\n- \(problems.joined(separator: "\n- "))\n\(playlist.text)", sourceLocation: sourceLocation)
    }

    /// Applies the checker to every poll, to consecutive polls, and to the sequence numbers seen
    /// over all of them (consecutive, none skipped). Returns every sequence number seen.
    @discardableResult
    func checkPolls(_ polls: [MediaPlaylist], variant: HLSPlaylistChecker.Variant, sourceLocation: SourceLocation = #_sourceLocation) -> [Int] {
        self.check(polls.count >= 3, "\(variant): only \(polls.count) distinct playlists were polled", sourceLocation: sourceLocation)
        var reported = 0
        for playlist in polls {
            let problems = HLSPlaylistChecker.check(playlist, variant: variant)
            if !problems.isEmpty, reported < 3 {
                reported += 1
                self.check(false, "\(variant) playlist violates the rules:\n- \(problems.joined(separator: "\n- "))\n\(playlist.text)", sourceLocation: sourceLocation)
            }
        }
        for (earlier, later) in zip(polls, polls.dropFirst()) {
            let problems = HLSPlaylistChecker.checkProgress(from: earlier, to: later)
            if !problems.isEmpty, reported < 6 {
                reported += 1
                self.check(false, "\(variant) playlist went wrong between two polls:\n- \(problems.joined(separator: "\n- "))\n--- earlier:\n\(earlier.text)--- later:\n\(later.text)", sourceLocation: sourceLocation)
            }
        }
        let seen = Set(polls.flatMap { $0.complete.map(\.sequence) }).sorted()
        if let first = seen.first, let last = seen.last {
            self.check(seen == Array(first...last), "\(variant): complete segments seen over all polls are not consecutive: \(seen)", sourceLocation: sourceLocation)
        }
        return seen
    }
}

/// The query an HLS session puts on every URI of the playlists it is given
/// (`?session=v-…`, and the request's own parameters).
enum HLSQueries {
    /// `text` with the query taken off every URI line and `URI="…"` attribute, and the
    /// distinct queries taken.
    static func strip(_ text: String) -> (String, Set<String>) {
        var queries: Set<String> = []
        var lines: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix("#"), let mark = line.firstIndex(of: "?") {
                queries.insert(String(line[line.index(after: mark)...]))
                lines.append(String(line[..<mark]))
                continue
            }
            var output = ""
            var rest = line[...]
            while let range = rest.range(of: "URI=\""), let close = rest[range.upperBound...].firstIndex(of: "\"") {
                let value = rest[range.upperBound..<close]
                output += rest[..<range.upperBound]
                if let mark = value.firstIndex(of: "?") {
                    queries.insert(String(value[value.index(after: mark)...]))
                    output += value[..<mark]
                } else {
                    output += value
                }
                rest = rest[close...]
            }
            output += rest
            lines.append(output)
        }
        return (lines.joined(separator: "\n"), queries)
    }

    /// The session id a set of queries names, when all name the same one.
    static func session(_ queries: Set<String>) -> String? {
        let sessions = Set(queries.compactMap { query in
            query.split(separator: "&").first { $0.hasPrefix("session=") }.map { String($0.dropFirst("session=".count)) }
        })
        return sessions.count == 1 ? sessions.first : nil
    }
}
