import Logging
import Media
import Testing

@testable import Cluster

/// The relay's lookups on the bus: any viewer can start one by asking for a name, and each
/// holds a subscription for up to the GOP request's timeout, so only so many run at once.
struct BusStreamSourceTests {
    @Test func lookupsOverTheLimitAreAnsweredNotFoundAtOnce() async throws {
        let bus = LocalBus()
        // A publisher that never answers its GOP requests: every lookup waits its full timeout.
        let silent = try bus.subscribe(subject: ">") { _ in }
        var configuration = BusStreamSource.Configuration()
        configuration.gopRequestTimeout = .seconds(2)
        configuration.maxConcurrentOpens = 2
        let source = BusStreamSource(bus: bus, configuration: configuration, logger: Logger(label: "test"))
        let registry = StreamRegistry(serializers: [])
        let start = ContinuousClock.now
        let times = await withTaskGroup(of: Duration.self) { group in
            for index in 0..<5 {
                group.addTask {
                    let path = try! StreamPath(app: "live", name: "nobody\(index)")
                    let hub = await source.open(.source(path), registry: registry)
                    #expect(hub == nil)
                    return ContinuousClock.now - start
                }
            }
            var times: [Duration] = []
            for await time in group { times.append(time) }
            return times.sorted()
        }
        // Three are refused at once; the two admitted wait for their GOP request to time out.
        #expect(times.filter { $0 < .seconds(1) }.count == 3, "finish times: \(times)")
        #expect(times.filter { $0 >= .seconds(1) }.count == 2, "finish times: \(times)")
        // The slots come back: a lookup after them is admitted (and waits its timeout again).
        let again = ContinuousClock.now
        #expect(await source.open(.source(try StreamPath(app: "live", name: "later")), registry: registry) == nil)
        #expect(ContinuousClock.now - again >= .seconds(1))
        silent.cancel()
    }
}
