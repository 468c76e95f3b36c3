import Foundation

/// Renders HLS playlists (RFC 8216 and its LL-HLS revision, draft-pantos-hls-rfc8216bis).
public enum HLSPlaylist {
    public enum Variant: Sendable {
        /// Classic HLS: MPEG-TS segments.
        case transportStream
        /// Low-latency HLS: fMP4 (CMAF) segments and parts.
        case lowLatency
    }

    struct RenditionReport: Sendable {
        var uri: String
        var lastSequence: Int
        var lastPart: Int
    }

    /// Parts are listed only for segments this close to the live edge (the spec asks for
    /// parts within three target durations of the end; older ones would only grow the
    /// playlist).
    static let segmentsWithParts = 3

    static func media(
        variant: Variant,
        segments: [HLSRendition.Segment],
        discontinuitySequence: Int,
        ended: Bool,
        configuration: HLSConfiguration,
        reports: [RenditionReport]
    ) -> String {
        let complete = segments.filter { $0.duration != nil }
        let longest = complete.compactMap(\.duration).max() ?? 0
        let target = max(Int(configuration.targetSegmentDuration.seconds.rounded(.up)), Int(longest.rounded()))
        let partTarget = configuration.partTargetDuration.seconds
        var lines = ["#EXTM3U"]
        switch variant {
        case .transportStream:
            lines.append("#EXT-X-VERSION:3")
        case .lowLatency:
            lines.append("#EXT-X-VERSION:9")
            // PART-HOLD-BACK must be at least three part targets.
            lines.append("#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=\(format(partTarget * 3))")
            lines.append("#EXT-X-PART-INF:PART-TARGET=\(format(partTarget))")
        }
        lines.append("#EXT-X-TARGETDURATION:\(max(target, 1))")
        let listed: [HLSRendition.Segment] = switch variant {
        case .transportStream: complete
        case .lowLatency: segments
        }
        lines.append("#EXT-X-MEDIA-SEQUENCE:\(listed.first?.sequence ?? 0)")
        if discontinuitySequence > 0 { lines.append("#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)") }

        var currentMap: Int?
        let partsFrom = listed.count - segmentsWithParts
        for (index, segment) in listed.enumerated() {
            if segment.discontinuity, index > 0 { lines.append("#EXT-X-DISCONTINUITY") }
            if variant == .lowLatency, currentMap != segment.initSection {
                lines.append("#EXT-X-MAP:URI=\"init\(segment.initSection).mp4\"")
                currentMap = segment.initSection
            }
            lines.append("#EXT-X-PROGRAM-DATE-TIME:\(iso8601(segment.programDateTime))")
            if variant == .lowLatency, index >= partsFrom {
                for (partIndex, part) in segment.parts.enumerated() {
                    var line = "#EXT-X-PART:DURATION=\(format(part.duration)),URI=\"part\(segment.sequence).\(partIndex).m4s\""
                    if part.independent { line += ",INDEPENDENT=YES" }
                    lines.append(line)
                }
            }
            guard let duration = segment.duration else { continue }
            lines.append("#EXTINF:\(format(duration)),")
            lines.append(variant == .transportStream ? "seg\(segment.sequence).ts" : "seg\(segment.sequence).m4s")
        }
        if variant == .lowLatency, !ended, let last = listed.last {
            // The next part the segmenter will produce: players request it ahead and we
            // hold the request until it exists.
            let hint = last.duration == nil ? "part\(last.sequence).\(last.parts.count).m4s" : "part\(last.sequence + 1).0.m4s"
            lines.append("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"\(hint)\"")
            for report in reports {
                lines.append("#EXT-X-RENDITION-REPORT:URI=\"\(report.uri)\",LAST-MSN=\(report.lastSequence),LAST-PART=\(report.lastPart)")
            }
        }
        if ended { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }

    struct VariantStream: Sendable {
        var uri: String
        var description: HLSRendition.Description
        var peakBitrate: Int
        var averageBitrate: Int
    }

    /// An audio-only rendition listed as alternate audio (a multitrack publisher's second
    /// language): `EXT-X-MEDIA:TYPE=AUDIO`, not a variant of its own.
    struct AlternateAudio: Sendable {
        var name: String
        var uri: String
        var codecs: [String]
        /// Output channels (`CHANNELS`); 0 when unknown, and then left out.
        var channels: Int = 0
        var peakBitrate: Int = 0
        var averageBitrate: Int = 0
    }

    /// The group every variant names when there is alternate audio.
    static let audioGroup = "audio"

    static func master(variant: Variant, streams: [VariantStream], audio: [AlternateAudio] = []) -> String {
        var lines = ["#EXTM3U", variant == .transportStream ? "#EXT-X-VERSION:3" : "#EXT-X-VERSION:9", "#EXT-X-INDEPENDENT-SEGMENTS"]
        if !audio.isEmpty {
            // The variants' own audio (track 0) is the default, with no URI: a URI-less entry
            // says it is in every variant's segments, so it is there only when it is. The
            // others have playlists of their own, and are chosen, not picked automatically
            // (they carry no language to pick by).
            // CHANNELS is the count of audio channels (RFC 8216bis 4.4.6.1), which Apple's
            // authoring rules ask of every audio entry: players pick stereo or surround by it.
            func channels(_ count: Int) -> String { count > 0 ? ",CHANNELS=\"\(count)\"" : "" }
            let variantsHaveAudio = streams.allSatisfy(\.description.hasAudio)
            if variantsHaveAudio {
                // The entry stands for the audio in every variant: its channels are said only
                // when the variants agree (a ladder mixes a surround source down to stereo in
                // its rungs, while the source rendition keeps it).
                let counts = Set(streams.map(\.description.audioChannels))
                let mainChannels = counts.count == 1 ? (counts.first ?? 0) : 0
                lines.append("#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"\(audioGroup)\",NAME=\"main\",DEFAULT=YES,AUTOSELECT=YES\(channels(mainChannels))")
            }
            for (index, alternate) in audio.enumerated() {
                let isDefault = !variantsHaveAudio && index == 0
                lines.append(
                    "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"\(audioGroup)\",NAME=\"\(alternate.name)\",DEFAULT=\(isDefault ? "YES" : "NO"),AUTOSELECT=\(isDefault ? "YES" : "NO")\(channels(alternate.channels)),URI=\"\(alternate.uri)\""
                )
            }
        }
        // A player on an alternate downloads the variant and the alternate: BANDWIDTH is the
        // largest such sum.
        let alternatePeak = audio.map(\.peakBitrate).max() ?? 0
        let alternateAverage = audio.map(\.averageBitrate).max() ?? 0
        for stream in streams {
            // BANDWIDTH must be present; before a segment completes, fall back to a modest guess
            // that players only use to pick a first rendition.
            let peak = (stream.peakBitrate > 0 ? stream.peakBitrate : 1_000_000) + alternatePeak
            var attributes = ["BANDWIDTH=\(peak)"]
            if stream.averageBitrate > 0 { attributes.append("AVERAGE-BANDWIDTH=\(stream.averageBitrate + alternateAverage)") }
            // CODECS names every codec a player may get with the variant, its group's too
            // (the routes list only alternates in codecs the variants already carry).
            var codecs = stream.description.codecs
            for codec in audio.flatMap(\.codecs) where !codecs.contains(codec) { codecs.append(codec) }
            if !codecs.isEmpty { attributes.append("CODECS=\"\(codecs.joined(separator: ","))\"") }
            if let width = stream.description.width, let height = stream.description.height {
                attributes.append("RESOLUTION=\(width)x\(height)")
            }
            if let frameRate = stream.description.frameRate { attributes.append("FRAME-RATE=\(String(format3: frameRate))") }
            if !audio.isEmpty { attributes.append("AUDIO=\"\(audioGroup)\"") }
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            lines.append(stream.uri)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Decimal seconds with millisecond precision, as playlists carry them.
    static func format(_ seconds: Double) -> String {
        String(format3: seconds)
    }

    /// `EXT-X-PROGRAM-DATE-TIME`'s form: ISO 8601, UTC, with milliseconds.
    static func iso8601(_ secondsSince1970: Double) -> String {
        Date(timeIntervalSince1970: (secondsSince1970 * 1000).rounded() / 1000).formatted(programDateTime)
    }

    private static let programDateTime = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}

extension String {
    /// `value` with exactly three decimals, without Foundation.
    init(format3 value: Double) {
        let thousandths = Int64((value * 1000).rounded())
        let whole = thousandths / 1000
        let fraction = abs(thousandths % 1000)
        let fractionText = String(fraction)
        self = "\(whole).\(String(repeating: "0", count: 3 - fractionText.count))\(fractionText)"
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

}

extension HLSPlaylist {
    /// `text` with `query` appended to every URI: the URI lines (segments, variant
    /// playlists) and every `URI="…"` attribute (maps, parts, preload hints, rendition
    /// reports). The URIs this server writes carry no query of their own.
    public static func appendingQuery(_ query: String, to text: String) -> String {
        var lines: [Substring] = []
        var output = ""
        output.reserveCapacity(text.utf8.count + 64 * query.utf8.count)
        lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() {
            if index > 0 { output += "\n" }
            if line.isEmpty {
                continue
            } else if !line.hasPrefix("#") {
                output += line
                output += "?"
                output += query
            } else if line.contains("URI=\"") {
                var rest = line[...]
                while let range = rest.range(of: "URI=\"") {
                    output += rest[..<range.upperBound]
                    rest = rest[range.upperBound...]
                    guard let close = rest.firstIndex(of: "\"") else { break }
                    output += rest[..<close]
                    output += "?"
                    output += query
                    rest = rest[close...]
                }
                output += rest
            } else {
                output += line
            }
        }
        return output
    }
}
