import NIOCore
import Testing

@testable import Relay

@Suite struct HLSRenditionTests {
    func part(_ byte: UInt8, independent: Bool = false) -> HLSRendition.Part {
        HLSRendition.Part(duration: 0.3, independent: independent, data: ByteBuffer(bytes: [byte]))
    }

    @Test func windowKeepsTheConfiguredNumberOfCompleteSegments() async {
        var configuration = HLSConfiguration()
        configuration.windowSegments = 3
        let rendition = HLSRendition(name: "src", configuration: configuration)
        for sequence in 0..<10 {
            await rendition.beginSegment(sequence, initSection: 0, discontinuity: false, programDateTime: 0)
            await rendition.addPart(part(1, independent: true))
            await rendition.completeSegment(duration: 2, transportStream: ByteBuffer(bytes: [0x47]))
        }
        let sequences = await rendition.segments.map(\.sequence)
        #expect(sequences == [7, 8, 9])
    }

    @Test func windowIsAlsoBoundedInBytes() async {
        var configuration = HLSConfiguration()
        configuration.maxRenditionBytes = 10_000
        let rendition = HLSRendition(name: "src", configuration: configuration)
        for sequence in 0..<6 {
            await rendition.beginSegment(sequence, initSection: 0, discontinuity: false, programDateTime: 0)
            await rendition.completeSegment(duration: 2, transportStream: ByteBuffer(repeating: 0x47, count: 4000))
        }
        let total = await rendition.segments.reduce(0) { $0 + ($1.transportStream?.readableBytes ?? 0) }
        #expect(total <= 10_000)
        #expect(await rendition.segments.last?.sequence == 5)
    }

    @Test func blockingWaitReturnsWhenThePartAppears() async {
        let rendition = HLSRendition(name: "src", configuration: HLSConfiguration())
        await rendition.beginSegment(0, initSection: 0, discontinuity: false, programDateTime: 0)
        async let waited = rendition.waitFor(sequence: 0, part: 1)
        try? await Task.sleep(for: .milliseconds(50))
        await rendition.addPart(part(0, independent: true))
        await rendition.addPart(part(1))
        #expect(await waited)
    }

    @Test func blockingWaitTimesOut() async {
        var configuration = HLSConfiguration()
        configuration.blockingTimeout = .milliseconds(100)
        let rendition = HLSRendition(name: "src", configuration: configuration)
        let clock = ContinuousClock()
        let start = clock.now
        let found = await rendition.waitFor(sequence: 4, part: 0)
        #expect(!found)
        #expect(clock.now - start < .seconds(2))
    }

    @Test func endingAnswersWaitersAndDropsTheOpenSegment() async {
        let rendition = HLSRendition(name: "src", configuration: HLSConfiguration())
        await rendition.beginSegment(0, initSection: 0, discontinuity: false, programDateTime: 0)
        await rendition.completeSegment(duration: 2, transportStream: ByteBuffer(bytes: [0x47]))
        await rendition.beginSegment(1, initSection: 0, discontinuity: false, programDateTime: 0)
        async let waited = rendition.waitFor(sequence: 3, part: 0)
        try? await Task.sleep(for: .milliseconds(20))
        await rendition.end()
        #expect(await waited == false)
        #expect(await rendition.segments.map(\.sequence) == [0])
        #expect(await rendition.ended)
    }

    @Test func lastPositionIsTheNewestPart() async {
        let rendition = HLSRendition(name: "src", configuration: HLSConfiguration())
        #expect(await rendition.lastPosition == nil)
        await rendition.beginSegment(0, initSection: 0, discontinuity: false, programDateTime: 0)
        await rendition.addPart(part(0))
        await rendition.addPart(part(1))
        await rendition.completeSegment(duration: 2, transportStream: ByteBuffer(bytes: [0x47]))
        await rendition.beginSegment(1, initSection: 0, discontinuity: false, programDateTime: 0)
        let position = await rendition.lastPosition
        #expect(position?.sequence == 0 && position?.part == 1)
    }
}
