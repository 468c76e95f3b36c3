import Media
import NIOCore
import Testing

@testable import Edge

/// What of a new upstream's replay reaches the edge's hub after a failover.
struct FailoverFilterTests {
    static let videoConfig = MediaFrame(kind: .video, timestamp: 0, isKeyframe: true, isSequenceHeader: true, payload: ByteBuffer(bytes: [0x17, 0, 0, 0, 0, 1, 0x64]))
    static let audioConfig = MediaFrame(kind: .audio, timestamp: 0, isSequenceHeader: true, payload: ByteBuffer(bytes: [0xAF, 0, 0x12, 0x10]))

    static func video(_ timestamp: Int64, key: Bool = false) -> MediaFrame {
        MediaFrame(kind: .video, timestamp: timestamp, isKeyframe: key, payload: ByteBuffer(bytes: [key ? 0x17 : 0x27, 1, 0, 0, 0, 0, 0, 0, 1, 0x41]))
    }

    static func audio(_ timestamp: Int64) -> MediaFrame {
        MediaFrame(kind: .audio, timestamp: timestamp, payload: ByteBuffer(bytes: [0xAF, 1, 0x21]))
    }

    /// The frames as an upstream sends them to a new viewer: configuration, then its GOP
    /// from `gopStart`, then live frames up to `end`, 40 ms video and 20 ms audio.
    static func replay(gopStart: Int64, end: Int64) -> [MediaFrame] {
        var frames = [videoConfig, audioConfig]
        var time = gopStart
        while time <= end {
            frames.append(video(time, key: time == gopStart))
            frames.append(audio(time))
            frames.append(audio(time + 20))
            time += 40
        }
        return frames
    }

    static func admitted(_ frames: [MediaFrame], _ filter: inout FailoverFilter) -> [String] {
        frames.filter { filter.admit($0) }.map { "\($0.kind)\($0.isSequenceHeader ? "-config" : "")@\($0.timestamp)" }
    }

    @Test func aSecondUpstreamOnTheSameTimelineContinuesWithoutRepeats() {
        var filter = FailoverFilter()
        let first = Self.admitted(Self.replay(gopStart: 1000, end: 2000), &filter)
        #expect(first.count == 2 + 26 * 3)
        // The second upstream replays from the same keyframe (1000) and goes on to 2400.
        filter.newConnection()
        let second = Self.admitted(Self.replay(gopStart: 1000, end: 2400), &filter)
        #expect(second.first == "video@2040")
        #expect(!second.contains { $0.hasSuffix("config@0") })
        #expect(second.count == 10 * 3)
    }

    @Test func anUpstreamOnAnotherTimelinePassesWhole() {
        var filter = FailoverFilter()
        _ = Self.admitted(Self.replay(gopStart: 1000, end: 2000), &filter)
        filter.newConnection()
        // An independent origin whose clock started elsewhere: everything passes (the hub
        // re-bases the jump), except configuration it already has.
        let other = Self.admitted(Self.replay(gopStart: 500_000, end: 500_400), &filter)
        #expect(other.first == "video@500000")
        #expect(other.count == 11 * 3)
        // Even one behind the old timeline.
        filter.newConnection()
        let behind = Self.admitted(Self.replay(gopStart: 10, end: 50), &filter)
        #expect(behind.first == "video@10")
    }

    @Test func changedConfigurationPasses() {
        var filter = FailoverFilter()
        _ = Self.admitted(Self.replay(gopStart: 0, end: 100), &filter)
        filter.newConnection()
        let changed = MediaFrame(kind: .video, timestamp: 0, isKeyframe: true, isSequenceHeader: true, payload: ByteBuffer(bytes: [0x17, 0, 0, 0, 0, 1, 0x4D]))
        let admitsChanged = filter.admit(changed)
        let admitsSameAudio = filter.admit(Self.audioConfig)
        #expect(admitsChanged)
        #expect(!admitsSameAudio)
    }

    @Test func rememberedTimestampsAreBounded() {
        var recent = FailoverFilter.RecentTimestamps(capacity: 4)
        for value in 0..<10 { recent.append(Int64(value)) }
        #expect(!recent.contains(5))
        #expect(recent.contains(6) && recent.contains(9))
    }
}
