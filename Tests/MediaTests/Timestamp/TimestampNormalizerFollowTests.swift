import Media
import Testing

/// A multitrack publisher's added tracks: their hubs take the stream hub's time
/// (`follow`, then `place`), so a track stays in step with the stream's own audio and video.
struct TimestampNormalizerFollowTests {
    @Test func aTrackFollowsTheStreamsOffsetAfterAReconnect() {
        var stream = TimestampNormalizer()
        _ = TimestampNormalizerTests.run(&stream, TimestampNormalizerTests.interleaved(from: 0, duration: 10_000))
        stream.beginNewEpoch()
        // The publisher comes back with its clock at 0, and a track it did not have before.
        let main = stream.normalize(0, kind: .video)
        #expect(main > 9_900)
        #expect(stream.follow(0) == main)
        #expect(stream.follow(1_000) == main + 1_000)
        // The track's frames move nothing on the stream's timeline.
        #expect(stream.normalize(33, kind: .video) == main + 33)
        #expect(stream.rebaseCount == 1)
    }

    @Test func aTracksFrameFirstInAnEpochPlacesTheNewClock() {
        var stream = TimestampNormalizer()
        _ = TimestampNormalizerTests.run(&stream, TimestampNormalizerTests.interleaved(from: 0, duration: 5_000))
        stream.beginNewEpoch()
        let track = stream.follow(70_000)
        #expect(track > 4_900 && track < 5_100)
        // The stream's own frames then continue from there, not from the old clock.
        #expect(stream.normalize(70_033, kind: .video) == track + 33)
        #expect(stream.normalize(70_040, kind: .audio) == track + 40)
        #expect(stream.rebaseCount == 1)
    }

    @Test func aTrackFrameThatJumpedIsPutAtTheStreamsLatestAndMovesNothing() {
        var stream = TimestampNormalizer()
        let before = TimestampNormalizerTests.run(&stream, TimestampNormalizerTests.interleaved(from: 0, duration: 2_000))
        let latest = before.last?.output ?? 0
        // Placed 498 s ahead, it would hold the track's later frames back for as long.
        #expect(stream.follow(500_000) == latest)
        #expect(stream.rebaseCount == 0)
        #expect(stream.normalize(2_033, kind: .video) == 2_033)
        #expect(stream.follow(2_040) == 2_040)
    }

    @Test func theNextEpochContinuesAfterATracksHighestFrame() {
        var stream = TimestampNormalizer()
        _ = TimestampNormalizerTests.run(&stream, TimestampNormalizerTests.interleaved(from: 0, duration: 2_000))
        // A track's frame a little ahead of the stream's own, then a reconnect.
        let ahead = stream.follow(2_300)
        stream.beginNewEpoch()
        #expect(stream.normalize(0, kind: .video) > ahead)
    }

    @Test func placeKeepsTheGivenTimeButNeverGoesBackwards() {
        var track = TimestampNormalizer()
        #expect(track.place(12_000, kind: .video) == 12_000)
        #expect(track.place(12_033, kind: .video) == 12_033)
        #expect(track.place(12_020, kind: .video) == 12_033)
        #expect(track.place(12_010, kind: .audio) == 12_010)
        #expect(track.place(0, kind: .script) == 12_033)
        // Its own new epoch moves nothing (the stream's hub placed the new clock) but is
        // counted, so the next frame is marked a discontinuity.
        track.beginNewEpoch()
        #expect(track.place(30_000, kind: .video) == 30_000)
        #expect(track.rebaseCount == 1)
    }
}
