import Testing

/// One FLV tag as a viewer receives it.
struct FLVTag {
    static let audio: UInt8 = 8
    static let video: UInt8 = 9
    static let script: UInt8 = 18

    var type: UInt8
    var timestamp: UInt32
    var data: ArraySlice<UInt8>

    var isVideo: Bool { self.type == Self.video }
    var isAudio: Bool { self.type == Self.audio }

    /// A video tag whose frame type is 1 (keyframe).
    var isKeyframe: Bool { self.isVideo && (self.data.first ?? 0) >> 4 == 1 }

    /// `0x17 0x00`: AVC sequence header.
    var isAVCSequenceHeader: Bool {
        self.isVideo && self.data.count >= 2 && self.data[self.data.startIndex] & 0x0F == 7
            && self.data[self.data.startIndex + 1] == 0
    }

    /// `0xAF 0x00` (sound format 10): AAC sequence header.
    var isAACSequenceHeader: Bool {
        self.isAudio && self.data.count >= 2 && self.data[self.data.startIndex] >> 4 == 10
            && self.data[self.data.startIndex + 1] == 0
    }

    /// A coded frame, not a sequence header.
    var isMediaFrame: Bool {
        (self.isVideo && !self.isAVCSequenceHeader) || (self.isAudio && !self.isAACSequenceHeader)
    }
}

/// An FLV byte stream (header, then tags), as far as it is complete.
struct FLVStream {
    var headerValid = false
    var hasAudioFlag = false
    var hasVideoFlag = false
    var tags: [FLVTag] = []
    /// Bytes after the last complete tag (a stream cut mid-tag).
    var trailingBytes = 0
    /// Set when the bytes are not FLV at all, or a tag is malformed.
    var error: String?

    static func parse(_ bytes: [UInt8]) -> FLVStream {
        var stream = FLVStream()
        guard bytes.count >= 13 else {
            stream.trailingBytes = bytes.count
            return stream
        }
        guard bytes[0] == 0x46, bytes[1] == 0x4C, bytes[2] == 0x56 else {
            stream.error = "no FLV signature (first bytes \(bytes.prefix(3).map { $0 }))"
            return stream
        }
        stream.headerValid = true
        stream.hasAudioFlag = bytes[4] & 0x04 != 0
        stream.hasVideoFlag = bytes[4] & 0x01 != 0
        let dataOffset = Int(bytes[5]) << 24 | Int(bytes[6]) << 16 | Int(bytes[7]) << 8 | Int(bytes[8])
        var index = dataOffset + 4  // skip PreviousTagSize0
        while index + 11 <= bytes.count {
            let type = bytes[index] & 0x1F
            let size = Int(bytes[index + 1]) << 16 | Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            let timestamp = UInt32(bytes[index + 7]) << 24 | UInt32(bytes[index + 4]) << 16
                | UInt32(bytes[index + 5]) << 8 | UInt32(bytes[index + 6])
            guard index + 11 + size + 4 <= bytes.count else { break }
            guard [FLVTag.audio, FLVTag.video, FLVTag.script].contains(type) else {
                stream.error = "tag of unknown type \(type) at offset \(index)"
                return stream
            }
            let previousSize = Int(bytes[index + 11 + size]) << 24 | Int(bytes[index + 12 + size]) << 16
                | Int(bytes[index + 13 + size]) << 8 | Int(bytes[index + 14 + size])
            guard previousSize == size + 11 else {
                stream.error = "PreviousTagSize \(previousSize) != \(size + 11) at offset \(index)"
                return stream
            }
            stream.tags.append(FLVTag(type: type, timestamp: timestamp, data: bytes[(index + 11)..<(index + 11 + size)]))
            index += 11 + size + 4
        }
        stream.trailingBytes = max(0, bytes.count - index)
        return stream
    }

    var videoFrames: [FLVTag] { self.tags.filter { $0.isVideo && $0.isMediaFrame } }
    var audioFrames: [FLVTag] { self.tags.filter { $0.isAudio && $0.isMediaFrame } }

    /// Places where a track's timestamp decreases: (type, previous, next).
    func timestampRegressions() -> [(type: UInt8, previous: UInt32, next: UInt32)] {
        var last: [UInt8: UInt32] = [:]
        var regressions: [(type: UInt8, previous: UInt32, next: UInt32)] = []
        for tag in self.tags where tag.isAudio || tag.isVideo {
            if let previous = last[tag.type], tag.timestamp < previous {
                regressions.append((tag.type, previous, tag.timestamp))
            }
            last[tag.type] = tag.timestamp
        }
        return regressions
    }
}

extension Scenario {
    /// What a viewer of an edge sees across a failover: timestamps that never go back, and
    /// no jump of 3 s or more in the video timeline (no skipped or repeated seconds).
    func checkContinuousTimeline(_ flv: FLVStream, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let regressions = flv.timestampRegressions()
        self.check(regressions.isEmpty, "\(label): timestamps go backwards: \(regressions.prefix(5).map { "type \($0.type): \($0.previous) -> \($0.next)" })", sourceLocation: sourceLocation)
        let video = flv.videoFrames.map(\.timestamp)
        let largestStep = zip(video, video.dropFirst()).map { Int64($1) - Int64($0) }.max() ?? 0
        self.check(largestStep < 3000, "\(label): the video timeline jumps by \(largestStep) ms across the failover", sourceLocation: sourceLocation)
        self.note("\(label): \(flv.videoFrames.count) video frames, largest DTS step \(largestStep) ms")
    }
}
