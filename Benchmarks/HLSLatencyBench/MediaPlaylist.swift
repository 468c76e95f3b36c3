/// A part by its parent segment's media sequence number and its index in the segment.
struct PartKey: Hashable, Sendable, Codable, Comparable {
    var sequence: Int
    var index: Int

    static func < (lhs: PartKey, rhs: PartKey) -> Bool {
        (lhs.sequence, lhs.index) < (rhs.sequence, rhs.index)
    }
}

/// What a player needs of a media playlist (classic or LL-HLS).
struct MediaPlaylist: Sendable {
    struct Part: Sendable {
        var key: PartKey
        var uri: String
        var duration: Double
    }

    struct Segment: Sendable {
        var sequence: Int
        var uri: String
        var duration: Double
    }

    var mediaSequence = 0
    /// The URI of the last EXT-X-MAP.
    var map: String?
    var parts: [Part] = []
    /// Complete segments (with EXTINF).
    var segments: [Segment] = []
    var ended = false
    var partTarget: Double?
    var targetDuration: Double?

    init(_ text: String) {
        var sequence = 0
        var partIndex = 0
        var pendingDuration: Double?
        for rawLine in text.split(whereSeparator: \.isNewline) {
            let line = Self.trimmed(rawLine)
            if line.isEmpty { continue }
            if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") {
                mediaSequence = Int(line.dropFirst("#EXT-X-MEDIA-SEQUENCE:".count)) ?? 0
                sequence = mediaSequence
            } else if line.hasPrefix("#EXT-X-MAP:") {
                map = Self.attribute("URI", in: line)
            } else if line.hasPrefix("#EXT-X-PART:") {
                guard let uri = Self.attribute("URI", in: line) else { continue }
                let duration = Self.attribute("DURATION", in: line).flatMap(Double.init) ?? 0
                parts.append(Part(key: PartKey(sequence: sequence, index: partIndex), uri: uri, duration: duration))
                partIndex += 1
            } else if line.hasPrefix("#EXT-X-PART-INF:") {
                partTarget = Self.attribute("PART-TARGET", in: line).flatMap(Double.init)
            } else if line.hasPrefix("#EXT-X-TARGETDURATION:") {
                targetDuration = Double(line.dropFirst("#EXT-X-TARGETDURATION:".count))
            } else if line.hasPrefix("#EXTINF:") {
                let value = line.dropFirst("#EXTINF:".count).prefix { $0 != "," }
                pendingDuration = Double(value) ?? 0
            } else if line.hasPrefix("#EXT-X-ENDLIST") {
                ended = true
            } else if !line.hasPrefix("#"), let duration = pendingDuration {
                segments.append(Segment(sequence: sequence, uri: line, duration: duration))
                pendingDuration = nil
                sequence += 1
                partIndex = 0
            }
        }
    }

    /// The `_HLS_msn` / `_HLS_part` of the part after the last one listed, as hls.js asks
    /// for it: the next part of the same segment, or part 0 of the next segment when the
    /// last part's segment is complete.
    var nextPart: PartKey {
        guard let last = parts.last else {
            return PartKey(sequence: mediaSequence + segments.count, index: 0)
        }
        if segments.contains(where: { $0.sequence == last.key.sequence }) {
            return PartKey(sequence: last.key.sequence + 1, index: 0)
        }
        return PartKey(sequence: last.key.sequence, index: last.key.index + 1)
    }

    private static func trimmed(_ line: Substring) -> String {
        var slice = line
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }

    /// The value of `NAME=` in an attribute list (quoted or not).
    static func attribute(_ name: String, in line: String) -> String? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        var rest = line[line.index(after: colon)...]
        // Bounded: each round consumes at least one attribute.
        while !rest.isEmpty {
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let key = rest[..<equals]
            rest = rest[rest.index(after: equals)...]
            var value: Substring
            if rest.first == "\"" {
                let afterQuote = rest.dropFirst()
                let close = afterQuote.firstIndex(of: "\"") ?? afterQuote.endIndex
                value = afterQuote[..<close]
                rest = close < afterQuote.endIndex ? afterQuote[afterQuote.index(after: close)...] : afterQuote[afterQuote.endIndex...]
            } else {
                let comma = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<comma]
                rest = rest[comma...]
            }
            if rest.first == "," { rest = rest.dropFirst() }
            if key == name { return String(value) }
        }
        return nil
    }
}
