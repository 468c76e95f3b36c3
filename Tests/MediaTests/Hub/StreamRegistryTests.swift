import Testing

@testable import Media

/// `StreamRegistry.forget`: a relay ends the mirror hubs nobody watches and takes them out
/// of the registry, which must not keep one ended hub per path ever mirrored, nor lose a
/// hub that has taken the path over since.
@Suite struct StreamRegistryTests {
    static let path = try! StreamPath(app: "live", name: "registry")  // literal, valid by construction

    /// A hub as `BusStreamSource` makes a mirror: from the registry, with the bus as publisher.
    func mirror(in registry: StreamRegistry) async -> StreamHub {
        let (hub, id) = await registry.hubForPublishing(Self.path)
        let result = hub.attachPublisher(id: id, owner: "bus") {}
        #expect(result == .attached(replacedIdle: false))
        return hub
    }

    @Test func forgottenEndedHubIsGone() async {
        let registry = StreamRegistry(serializers: [])
        let hub = await mirror(in: registry)
        hub.end()
        // Ended, so no lookup finds it, but the entry is still there.
        let found = await registry.hub(for: Self.path)
        #expect(found == nil)
        #expect(await registry.entryCount == 1)

        await registry.forget(.source(Self.path), hub: hub)
        #expect(await registry.entryCount == 0)
        let streams = await registry.streams
        #expect(streams.isEmpty)
    }

    @Test func forgettingAnotherHubRemovesNothing() async {
        let registry = StreamRegistry(serializers: [])
        let first = await mirror(in: registry)
        first.end()
        // A new mirror of the same path replaces the ended one before the old one is forgotten.
        let second = await mirror(in: registry)
        #expect(first !== second)

        await registry.forget(.source(Self.path), hub: first)
        let current = await registry.hub(for: Self.path)
        #expect(current === second)
        #expect(await registry.entryCount == 1)

        // Nor does a hub that was never registered, live or not.
        let stranger = StreamHub(path: Self.path, serializers: [])
        await registry.forget(.source(Self.path), hub: stranger)
        let stillCurrent = await registry.hub(for: Self.path)
        #expect(stillCurrent === second)
        #expect(await registry.entryCount == 1)
    }
}
