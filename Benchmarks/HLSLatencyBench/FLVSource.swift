import Foundation
import Media
import NIOCore

/// One tag of the source file, classified once so the publisher only paces and sends.
struct SourceTag: Sendable {
    enum Kind: Sendable {
        case audio
        case video
        case script
    }

    var kind: Kind
    /// Milliseconds, relative to the first tag of the file.
    var timestamp: Int64
    var body: ByteBuffer
    /// Decoder configuration (AVC sequence header, AAC AudioSpecificConfig): sent once, not a frame.
    var isSequenceHeader: Bool
    /// Video only: a coded frame (the frames whose latency is measured).
    var isCodedVideoFrame: Bool
    var isKeyframe: Bool
    /// Video only: PTS - DTS in milliseconds.
    var compositionTime: Int64
}

/// The pre-made FLV file (made by scripts/bench-hls.sh with ffmpeg), read whole into tags.
struct FLVSource: Sendable {
    var tags: [SourceTag]
    /// How far the timeline moves each time the file is replayed (looped publishing): one
    /// frame step past the last tag of either track, so both tracks stay strictly increasing.
    var loopLength: Int64

    init(path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BenchError.message("cannot read \(path)")
        }
        var buffer = ByteBuffer(bytes: data)
        var reader = FLVTagReader()
        var tags: [SourceTag] = []
        var first: Int64?
        // Each iteration consumes one complete tag; nil means the file is used up.
        while let tag = try reader.nextTag(from: &buffer) {
            let timestamp = Int64(tag.header.timestamp)
            let origin = first ?? timestamp
            first = origin
            var source = SourceTag(
                kind: .script, timestamp: timestamp - origin, body: tag.body,
                isSequenceHeader: false, isCodedVideoFrame: false, isKeyframe: false, compositionTime: 0
            )
            switch tag.header.tagType {
            case .script:
                source.kind = .script
            case .audio:
                source.kind = .audio
                let header = try AudioTagHeader(from: tag.body)
                source.isSequenceHeader = header.isSequenceHeader
            case .video:
                source.kind = .video
                let header = try VideoTagHeader(from: tag.body)
                source.isSequenceHeader = header.isSequenceHeader
                source.isCodedVideoFrame = header.packetType == .codedFrames && tag.body.readableBytes > header.headerLength
                source.isKeyframe = header.isKeyframe
                source.compositionTime = Int64(header.compositionTime)
            }
            tags.append(source)
        }
        guard tags.contains(where: \.isCodedVideoFrame) else {
            throw BenchError.message("\(path) has no video frames")
        }
        self.tags = tags
        self.loopLength = max(Self.end(of: tags, kind: .video), Self.end(of: tags, kind: .audio))
    }

    /// The last timestamp of a track plus its median step.
    private static func end(of tags: [SourceTag], kind: SourceTag.Kind) -> Int64 {
        let stamps = tags.filter { $0.kind == kind && !$0.isSequenceHeader }.map(\.timestamp)
        guard let last = stamps.last else { return 0 }
        let steps = zip(stamps.dropFirst(), stamps).map { $0 - $1 }.filter { $0 > 0 }.sorted()
        return last + (steps.isEmpty ? 33 : steps[steps.count / 2])
    }

    /// The file's video length in seconds.
    var seconds: Double { Double(loopLength) / 1000 }
}

enum BenchError: Error, CustomStringConvertible {
    case message(String)

    var description: String {
        switch self {
        case .message(let text): text
        }
    }
}

/// The tags a publisher sends for `durationMilliseconds`, the file looped seamlessly (at most
/// 100,000 times): each with its timestamp on the looped timeline and its loop number.
struct PublishTimeline: Sequence, IteratorProtocol {
    let source: FLVSource
    let durationMilliseconds: Int64
    private var loop: Int64 = 0
    private var index = 0

    init(source: FLVSource, durationMilliseconds: Int64) {
        self.source = source
        self.durationMilliseconds = durationMilliseconds
    }

    mutating func next() -> (tag: SourceTag, timestamp: Int64, loop: Int64)? {
        guard !source.tags.isEmpty else { return nil }
        if index == source.tags.count {
            // A file shorter than one frame step would never end otherwise.
            guard source.loopLength > 0, loop < 100_000 else { return nil }
            loop += 1
            index = 0
        }
        let tag = source.tags[index]
        let timestamp = tag.timestamp + loop * source.loopLength
        guard timestamp < durationMilliseconds else { return nil }
        index += 1
        return (tag, timestamp, loop)
    }
}

