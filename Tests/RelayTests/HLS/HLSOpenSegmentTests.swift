import Logging
import Media
import NIOCore
import TestSupport
import Testing

@testable import Relay

/// The bounds of the segment in progress (`HLSConfiguration.maxOpenSegmentBytes` and
/// `maxOpenSegmentDuration`): segments end only at keyframes, and a publisher that stops
/// sending them must not grow one without limit. Frames go through a real segmenter (libav
/// muxers) into a rendition, as HLSService wires them, without a hub or sockets.
@Suite struct HLSOpenSegmentTests {
    /// A real SPS (320x240 High): the muxers need one, not real pictures.
    static let avcSequenceHeader = SampleConfigurationRecords.avc320x240

    /// A coded H.264 frame of exactly `size` payload bytes: the FLV video tag header
    /// (keyframe or inter frame, AVC NALU, composition time 0), then one length-prefixed
    /// slice NAL unit (IDR or non-IDR) of filler. A NAL length of 256–511 would begin like
    /// an Annex B start code (00 00 01), so the tests use other sizes.
    static func videoFrame(keyframe: Bool, timestamp: Int64, size: Int) -> MediaFrame {
        let nalLength = size - 9
        var bytes: [UInt8] = [keyframe ? 0x17 : 0x27, 0x01, 0x00, 0x00, 0x00]
        bytes += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: nalLength >> $0) }
        bytes.append(keyframe ? 0x65 : 0x41)
        bytes += [UInt8](repeating: 0xAA, count: nalLength - 1)
        return MediaFrame(kind: .video, timestamp: timestamp, isKeyframe: keyframe, payload: ByteBuffer(bytes: bytes))
    }

    /// A segmenter that has seen the video sequence header, and the stream of its events.
    static func segmenter(_ configuration: HLSConfiguration) throws -> (HLSSegmenter, AsyncStream<HLSSegmenter.Event>, AsyncStream<HLSSegmenter.Event>.Continuation) {
        let (events, continuation) = AsyncStream.makeStream(of: HLSSegmenter.Event.self)
        let account = HLSByteBudget(limit: configuration.maxNodeBytes).account()
        let segmenter = HLSSegmenter(configuration: configuration, events: continuation, logger: Logger(label: "HLSOpenSegmentTests"), account: account)
        segmenter.process(try MediaFrame.classified(kind: .video, timestamp: 0, payload: ByteBuffer(bytes: Self.avcSequenceHeader)))
        return (segmenter, events, continuation)
    }

    /// Applies the (finished) stream of events to a new rendition, as HLSService does.
    /// Returns the rendition, the most bytes it held after any event, and how many parts
    /// the open segment had when each abandonment dropped it.
    static func replay(_ events: AsyncStream<HLSSegmenter.Event>, configuration: HLSConfiguration, account: HLSByteBudget.Account? = nil) async -> (rendition: HLSRendition, mostHeld: Int, droppedParts: [Int]) {
        let rendition = HLSRendition(name: "src", configuration: configuration, account: account)
        var mostHeld = 0
        var droppedParts: [Int] = []
        for await event in events {
            if case .abandonSegment = event {
                let openSegment = await rendition.segments.last
                droppedParts.append(openSegment.map { $0.duration == nil ? $0.parts.count : 0 } ?? 0)
            }
            await rendition.apply(event)
            let segments = await rendition.segments
            mostHeld = max(mostHeld, segments.reduce(0) { $0 + $1.byteCount })
        }
        return (rendition, mostHeld, droppedParts)
    }

    /// What the node's HLS budget holds for the rendition is what its window and its open
    /// segment were charged: abandoned segments gave theirs back.
    static func checkAccount(_ segmenter: HLSSegmenter, _ rendition: HLSRendition, sourceLocation: SourceLocation = #_sourceLocation) async {
        let charged = await rendition.segments.reduce(0) { $0 + $1.charged }
        #expect(segmenter.account.bytesHeld == charged + segmenter.openSegmentBytes, sourceLocation: sourceLocation)
    }

    /// Well-behaved media after the broken part: `count` GOPs of a keyframe and
    /// `framesPerGOP - 1` small P-frames, 33 ms apart.
    static func feedGOPs(_ count: Int, framesPerGOP: Int, into segmenter: HLSSegmenter, after timestamp: inout Int64) {
        for _ in 0..<count {
            timestamp += 33
            segmenter.process(videoFrame(keyframe: true, timestamp: timestamp, size: 1000))
            for _ in 1..<framesPerGOP {
                timestamp += 33
                segmenter.process(videoFrame(keyframe: false, timestamp: timestamp, size: 200))
            }
        }
    }

    @Test func segmentWithoutKeyframesIsAbandonedAtItsByteBoundAndSegmentingResumes() async throws {
        var configuration = HLSConfiguration()
        // Open segments of at most 100,000 bytes (both variants): a few dozen P-frames.
        configuration.maxRenditionBytes = 300_000
        let bound = configuration.maxOpenSegmentBytes
        #expect(bound == 100_000)
        let (segmenter, events, continuation) = try Self.segmenter(configuration)

        // One keyframe, then 10 s of P-frames (600 KB, twice the whole rendition's bound,
        // which the parts of an unbounded open segment would all have stayed in).
        var timestamp: Int64 = 0
        segmenter.process(Self.videoFrame(keyframe: true, timestamp: timestamp, size: 1000))
        var largestOpenSegment = 0
        for _ in 0..<300 {
            timestamp += 33
            segmenter.process(Self.videoFrame(keyframe: false, timestamp: timestamp, size: 2000))
            largestOpenSegment = max(largestOpenSegment, segmenter.openSegmentBytes)
        }
        #expect(largestOpenSegment > bound / 2)
        #expect(largestOpenSegment <= bound)
        // Abandoned: nothing is held, and P-frames are skipped until the next keyframe.
        #expect(segmenter.openSegmentBytes == 0)

        // Then three GOPs of 64 frames (2.112 s, 43,584 bytes counted: within the bound).
        Self.feedGOPs(3, framesPerGOP: 64, into: segmenter, after: &timestamp)
        continuation.finish()

        let (rendition, mostHeld, droppedParts) = await Self.replay(events, configuration: configuration, account: segmenter.account)
        await Self.checkAccount(segmenter, rendition)
        #expect(await rendition.abandonedSegments == [.tooLarge: 1])
        // The abandoned segment's parts were dropped at once, not left until the next keyframe.
        #expect(droppedParts.count == 1)
        #expect(droppedParts.allSatisfy { $0 >= 2 })
        #expect(mostHeld <= configuration.maxRenditionBytes + bound)

        let segments = await rendition.segments
        #expect(segments.map(\.sequence) == [1, 2, 3])
        #expect(segments.compactMap(\.duration) == [2.112, 2.112])
        #expect(segments.allSatisfy { $0.duration == nil || ($0.transportStream?.readableBytes ?? 0) > 0 })
        // The first segment after the gap is a discontinuity, with the new muxers' init section.
        #expect(segments.first?.discontinuity == true)
        #expect(segments.first?.initSection == 1)

        let discontinuitySequence = await rendition.discontinuitySequence
        let classic = HLSPlaylist.media(
            variant: .transportStream, segments: segments, discontinuitySequence: discontinuitySequence,
            ended: false, configuration: configuration, reports: []
        )
        let lines = classic.split(separator: "\n").map(String.init)
        #expect(lines.first == "#EXTM3U")
        #expect(lines.contains("#EXT-X-MEDIA-SEQUENCE:1"))
        #expect(lines.filter { $0.hasPrefix("#EXTINF:") } == ["#EXTINF:2.112,", "#EXTINF:2.112,"])
        #expect(lines.contains("seg1.ts") && lines.contains("seg2.ts"))
        #expect(!classic.contains("seg0.ts"))
        let lowLatency = HLSPlaylist.media(
            variant: .lowLatency, segments: segments, discontinuitySequence: discontinuitySequence,
            ended: false, configuration: configuration, reports: []
        )
        #expect(lowLatency.contains("#EXT-X-MAP:URI=\"init1.mp4\""))
        #expect(!lowLatency.contains("part0."))
        #expect(lowLatency.contains("#EXTINF:2.112,\nseg1.m4s"))
    }

    @Test func segmentWithoutKeyframesIsAbandonedAtItsDurationBound() async throws {
        var configuration = HLSConfiguration()
        // Open segments of at most 5 s; the byte bound (21 MiB) is far away.
        configuration.targetSegmentDuration = .milliseconds(500)
        #expect(configuration.maxOpenSegmentDuration == .seconds(5))
        let (segmenter, events, continuation) = try Self.segmenter(configuration)

        // One keyframe, then 6.6 s of small P-frames.
        var timestamp: Int64 = 0
        segmenter.process(Self.videoFrame(keyframe: true, timestamp: timestamp, size: 1000))
        for _ in 0..<200 {
            timestamp += 33
            segmenter.process(Self.videoFrame(keyframe: false, timestamp: timestamp, size: 200))
        }
        #expect(segmenter.openSegmentBytes == 0)

        // Then three GOPs of 16 frames (0.528 s).
        Self.feedGOPs(3, framesPerGOP: 16, into: segmenter, after: &timestamp)
        continuation.finish()

        let (rendition, _, droppedParts) = await Self.replay(events, configuration: configuration, account: segmenter.account)
        await Self.checkAccount(segmenter, rendition)
        #expect(await rendition.abandonedSegments == [.tooLong: 1])
        #expect(droppedParts.count == 1)
        let segments = await rendition.segments
        #expect(segments.map(\.sequence) == [1, 2, 3])
        #expect(segments.compactMap(\.duration) == [0.528, 0.528])
        #expect(segments.first?.discontinuity == true)
        let discontinuitySequence = await rendition.discontinuitySequence
        let playlist = HLSPlaylist.media(
            variant: .transportStream, segments: segments, discontinuitySequence: discontinuitySequence,
            ended: false, configuration: configuration, reports: []
        )
        #expect(playlist.split(separator: "\n").filter { $0 == "#EXTINF:0.528," }.count == 2)
    }

    @Test func keyframeThatWouldOverfillTheSegmentCutsItEarlyInstead() async throws {
        var configuration = HLSConfiguration()
        configuration.maxRenditionBytes = 300_000  // open segments of at most 100,000 bytes
        let (segmenter, events, continuation) = try Self.segmenter(configuration)

        // 87,376 bytes counted (both variants and per-frame overhead) in 0.66 s, then a
        // 10,000-byte keyframe: with it the segment would pass the bound long before its 2 s.
        var timestamp: Int64 = 0
        segmenter.process(Self.videoFrame(keyframe: true, timestamp: timestamp, size: 1000))
        for _ in 0..<20 {
            timestamp += 33
            segmenter.process(Self.videoFrame(keyframe: false, timestamp: timestamp, size: 2000))
        }
        timestamp += 33
        segmenter.process(Self.videoFrame(keyframe: true, timestamp: timestamp, size: 10000))
        #expect(segmenter.openSegmentBytes == 2 * 10000 + HLSSegmenter.perFrameOverhead)
        continuation.finish()

        let (rendition, _, droppedParts) = await Self.replay(events, configuration: configuration, account: segmenter.account)
        await Self.checkAccount(segmenter, rendition)
        #expect(await rendition.abandonedSegments.isEmpty)
        #expect(droppedParts.isEmpty)
        let segments = await rendition.segments
        #expect(segments.map(\.sequence) == [0, 1])
        #expect(segments.compactMap(\.duration) == [0.693])
        #expect(segments.last?.discontinuity == false)
    }
}
