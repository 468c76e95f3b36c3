import CSRT
import Session
import SRT
import Testing

/// `SRTRefusalMemory`: the admission's refusal of a request, answered in the handshake of
/// the same request from the same host while it lasts, and a bounded table.
@Suite struct SRTRefusalMemoryTests {
    @Test func eachRefusalHasTheRejectionCodeItsKindMeans() {
        #expect(SRTRefusalMemory.code(for: .denied("wrong key")) == SRT_REJX_UNAUTHORIZED)
        #expect(SRTRefusalMemory.code(for: .notFound("not live")) == SRT_REJX_NOTFOUND)
        #expect(SRTRefusalMemory.code(for: .badName("taken")) == SRT_REJX_CONFLICT)
        #expect(SRTRefusalMemory.code(for: .unavailable("full")) == SRT_REJX_OVERLOAD)
        #expect(SRTRefusalMemory.code(for: .redirected(to: "srt://other:9000")) == SRT_REJX_OVERLOAD)
    }

    @Test func theSameRequestIsRecalledUntilItExpires() throws {
        let memory = SRTRefusalMemory(duration: .seconds(10))
        let now = ContinuousClock.now
        // The two conventions of one request are one request.
        let srs = try SRTStreamID(parsing: "#!::r=live/cam,m=publish,key=wrong")
        let key = SRTRefusalMemory.key(host: "10.0.0.2", srs)
        memory.remember(key, .denied("stream key refused"), now: now)
        #expect(SRTRefusalMemory.key(host: "10.0.0.2", try SRTStreamID(parsing: "publish:live/cam?key=wrong")) == key)
        #expect(memory.recall(key, now: now + .seconds(9))?.code == SRT_REJX_UNAUTHORIZED)
        #expect(memory.recall(key, now: now + .seconds(9))?.reason == "stream key refused")
        // Another host, another key, another mode: not the same request.
        #expect(memory.recall(SRTRefusalMemory.key(host: "10.0.0.3", srs), now: now) == nil)
        #expect(memory.recall(SRTRefusalMemory.key(host: "10.0.0.2", try SRTStreamID(parsing: "#!::r=live/cam,m=publish,key=right")), now: now) == nil)
        #expect(memory.recall(SRTRefusalMemory.key(host: "10.0.0.2", try SRTStreamID(parsing: "#!::r=live/cam,m=request,key=wrong")), now: now) == nil)
        // Expired: asked about afresh, and forgotten.
        #expect(memory.recall(key, now: now + .seconds(11)) == nil)
        #expect(memory.count == 0)
    }

    @Test func onlyDenialsAreRemembered() {
        let memory = SRTRefusalMemory(duration: .seconds(10))
        // What lasts moments (a stream taken, a capacity, a drain, not live yet, a redirect)
        // is asked again: replayed, it would keep a reconnecting encoder or an early viewer out.
        for refusal in [SessionRefusal.badName("taken"), .unavailable("full"), .notFound("not live"), .redirected(to: "srt://other:9000")] {
            memory.remember("request", refusal)
            #expect(memory.recall("request") == nil, "\(refusal) was remembered")
        }
        memory.remember("request", .denied("stream key refused"))
        #expect(memory.recall("request")?.code == SRT_REJX_UNAUTHORIZED)
    }

    @Test func theTableIsBounded() {
        let memory = SRTRefusalMemory(duration: .seconds(10), maxEntries: 8)
        let now = ContinuousClock.now
        for index in 0..<8 { memory.remember("old-\(index)", .denied("no"), now: now) }
        #expect(memory.count == 8)
        // Full: the table starts over.
        memory.remember("new-0", .denied("no"), now: now + .seconds(1))
        #expect(memory.count == 1 && memory.recall("new-0", now: now + .seconds(1)) != nil)
        for index in 0..<100 { memory.remember("flood-\(index)", .denied("no"), now: now + .seconds(2)) }
        #expect(memory.count <= 8)
    }
}
