import Cluster
import Media
import NIOConcurrencyHelpers
import NIOCore
import Testing

/// Two transcoders' publications of one rung around a handover: what each publishes, and
/// what a relay receiving both gets.
struct RungHandoverTests {
    /// Source and rung frames of one instant: a 30 fps picture (PTS = DTS, as rungs have no
    /// B-frames) with a keyframe every `gop` frames, and an audio frame at the same time.
    static func picture(_ index: Int, gop: Int = 30) -> MediaFrame {
        Frames.video(timestamp: Int64(index) * 33, keyframe: index % gop == 0, composition: 0)
    }

    static func audio(_ index: Int) -> MediaFrame {
        Frames.audio(timestamp: Int64(index) * 33 + 5)
    }

    final class Published: Sendable {
        let frames = NIOLockedValueBox<[String]>([])
        func append(_ frame: MediaFrame) {
            let label = frame.isSequenceHeader ? "config" : frame.kind == .script ? "script" : "\(frame.kind == .video ? (frame.isKeyframe ? "K" : "v") : "a")\(frame.timestamp)"
            frames.withLockedValue { $0.append(label) }
        }
        var all: [String] { frames.withLockedValue { $0 } }
        var media: [String] { all.filter { $0 != "config" && $0 != "script" } }
    }

    /// The outgoing runs from picture 0; the incoming joins at picture 40 and asks at 45;
    /// the cut is the keyframe at picture 60. The outgoing publishes pictures 0–59 and says
    /// so; the incoming publishes its configuration, then from the keyframe at 60 on.
    @Test func theIncomingStartsAtTheKeyframeWhereTheOutgoingStops() {
        let cuts = NIOLockedValueBox<[String]>([])
        let allCut = NIOLockedValueBox(false)
        let outgoing = RungHandover(mode: .direct, onRungCut: { rung in cuts.withLockedValue { $0.append(rung) } }, onAllCut: { allCut.withLockedValue { $0 = true } })
        let incoming = RungHandover(mode: .incoming, releaseTimeout: .seconds(60))
        let outPublished = Published()
        let inPublished = Published()
        #expect(outgoing.bind(rung: "360p") { outPublished.append($0) })
        #expect(incoming.bind(rung: "360p") { inPublished.append($0) })

        incoming.offer(Frames.videoSequenceHeader(), rung: "360p")
        for index in 0..<120 {
            let source = Self.picture(index)
            outgoing.sourceFrame(source)
            if index >= 40 { incoming.sourceFrame(source) }
            if index == 45 {
                // The incoming asks with the newest PTS it read; the outgoing is there too.
                let threshold = outgoing.beginOutgoing(proposed: incoming.newestSourceTimestamp ?? 0)
                #expect(threshold == Int64(45 * 33))
                incoming.adopt(threshold: threshold ?? 0)
            }
            // Each rung: the picture, then its audio.
            outgoing.offer(Self.picture(index), rung: "360p")
            outgoing.offer(Self.audio(index), rung: "360p")
            if cuts.withLockedValue({ $0.contains("360p") }) { incoming.outgoingStopped(rung: "360p") }
            if index >= 40 {
                // The incoming's encoder starts at the live edge with a keyframe.
                let picture = index == 40 ? Frames.video(timestamp: 40 * 33, keyframe: true, composition: 0) : Self.picture(index)
                incoming.offer(picture, rung: "360p")
                incoming.offer(Self.audio(index), rung: "360p")
            }
        }
        #expect(outgoing.cut == Int64(60 * 33))
        #expect(cuts.withLockedValue { $0 } == ["360p"])
        #expect(allCut.withLockedValue { $0 })
        // The outgoing: everything before picture 60, nothing after.
        #expect(outPublished.media.last == "a\(59 * 33 + 5)")
        #expect(outPublished.media.count == 120)
        // The incoming: its configuration record, then the keyframe at 60, continuing.
        #expect(inPublished.all.first == "config")
        #expect(inPublished.media.first == "K\(60 * 33)")
        #expect(inPublished.media.count == 120)
        // Once released, the incoming is an ordinary job that may hand over in turn.
        #expect(incoming.mode == .direct)
        #expect(incoming.answersGOPRequests(for: "360p"))
    }

    /// Until the outgoing's word, the incoming holds what it has from the cut on (within
    /// `releaseTimeout`); a second drain's request to a job still taking over gets no answer.
    @Test func theIncomingWaitsForTheOutgoingsWordAndAnswersNoRequestMeanwhile() {
        let incoming = RungHandover(mode: .incoming, releaseTimeout: .seconds(60))
        let published = Published()
        #expect(incoming.bind(rung: "240p") { published.append($0) })
        for index in 0..<40 { incoming.sourceFrame(Self.picture(index)) }
        incoming.adopt(threshold: 0)
        for index in 0..<40 { incoming.offer(Self.picture(index), rung: "240p") }
        #expect(published.all.isEmpty)
        #expect(!incoming.answersGOPRequests(for: "240p"))
        #expect(incoming.beginOutgoing(proposed: 0) == nil)
        incoming.outgoingStopped(rung: "240p")
        // From the first keyframe after the threshold: picture 30.
        #expect(published.media.first == "K\(30 * 33)")
        #expect(published.media.count == 10)
    }

    /// No outgoing answered: the incoming publishes from its first keyframe at once.
    @Test func anAbandonedHandoverPublishesFromTheFirstKeyframe() {
        let incoming = RungHandover(mode: .incoming)
        let published = Published()
        #expect(incoming.bind(rung: "480p") { published.append($0) })
        incoming.offer(Frames.audio(timestamp: 1), rung: "480p")
        incoming.offer(Frames.video(timestamp: 10, keyframe: false, composition: 0), rung: "480p")
        incoming.offer(Frames.video(timestamp: 43, keyframe: true, composition: 0), rung: "480p")
        incoming.abandon()
        #expect(published.media == ["K43"])
        incoming.offer(Frames.video(timestamp: 76, keyframe: false, composition: 0), rung: "480p")
        #expect(published.media == ["K43", "v76"])
    }

    /// What an incoming holds is bounded in bytes: the oldest frames go first.
    @Test func heldFramesAreBoundedInBytes() {
        let incoming = RungHandover(mode: .incoming, maxHeldBytes: 10_000)
        let published = Published()
        #expect(incoming.bind(rung: "720p") { published.append($0) })
        for index in 0..<1000 {
            incoming.offer(Frames.video(timestamp: Int64(index) * 33, keyframe: index % 5 == 0, size: 1000, composition: 0), rung: "720p")
        }
        incoming.abandon()
        // At most ten 1000-byte frames (plus headers) were kept: from the last keyframe in them.
        #expect(published.media.count <= 10)
        #expect(published.media.first?.hasPrefix("K") == true)
    }

    /// A direct job publishes everything, in order, and a rung table is bounded.
    @Test func aDirectJobPublishesEverythingAndTheRungTableIsBounded() {
        let handover = RungHandover(mode: .direct)
        let published = Published()
        #expect(handover.bind(rung: "a") { published.append($0) })
        for index in 0..<10 { handover.offer(Self.picture(index), rung: "a") }
        #expect(published.media.count == 10)
        for index in 1..<RungHandover.maxRungs { #expect(handover.bind(rung: "r\(index)") { _ in }) }
        #expect(!handover.bind(rung: "one-too-many") { _ in })
    }
}
