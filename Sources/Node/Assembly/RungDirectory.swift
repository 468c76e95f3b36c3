import Cluster
import Media
import Synchronization
import Transcode

/// Which rungs a stream has, for a relay's HLS: the coordinator knows (`lookup`: the
/// renditions of the live session, whatever ladder the coordinator was configured with,
/// and the tracks of a multitrack publisher, as its ingest reports them);
/// while it cannot be asked, the relay's own ladder for the application stands in. An edge,
/// which has no coordinator, always answers from its own ladders (the upstream answers 404
/// for a rung it does not carry, and the edge's negative cache remembers that).
///
/// A list of rungs is kept 5 s, so players polling playlists do not each call the
/// coordinator; an empty answer (not live yet) or a stand-in only 1 s, so a player that
/// asks at go-live gets the rungs in its next master playlist. Concurrent requests for
/// one stream share one call. At most `capacity` streams are remembered.
final class RungDirectory: Sendable {
    private enum Entry {
        case known([String], until: ContinuousClock.Instant)
        case asking(Task<[String], Never>)
    }

    private let coordinator: $CoordinatorAPI?
    private let ladders: Reloadable<[String: Ladder]>
    private let entries = Mutex<[StreamPath: Entry]>([:])

    /// The most streams remembered. HLS requests need no credentials and every name one
    /// asks about becomes an entry: requests for random names must not grow the table
    /// (expired entries are only swept when a new name is asked about, so expiry alone
    /// would not bound it under a flood of new names).
    static let capacity = 4096

    init(coordinator: $CoordinatorAPI?, ladders: Reloadable<[String: Ladder]>) {
        self.coordinator = coordinator
        self.ladders = ladders
    }

    func names(of path: StreamPath) async -> [String] {
        let now = ContinuousClock.now
        let cached = entries.withLock { entries -> [String]? in
            if case .known(let names, let until) = entries[path], until > now { return names }
            return nil
        }
        if let cached { return cached }
        let task = entries.withLock { entries -> Task<[String], Never> in
            switch entries[path] {
            case .known(let names, let until) where until > now:
                return Task { names }
            case .asking(let task):
                return task
            default:
                Self.makeRoom(in: &entries, now: now)
                let task = Task { await self.ask(path) }
                entries[path] = .asking(task)
                return task
            }
        }
        return await task.value
    }

    private func ask(_ path: StreamPath) async -> [String] {
        var names: [String]
        guard let coordinator else {
            names = ladders.value[path.app]?.rungs.map(\.name) ?? []
            entries.withLock { entries in
                if entries[path] != nil { entries[path] = .known(names, until: .now + .seconds(5)) }
            }
            return names
        }
        var keep = Duration.seconds(1)
        do {
            let location = try await NodeActorSystem.$callTimeout.withValue(.seconds(1)) {
                try await coordinator.lookup(app: path.app, name: path.name)
            }
            // Not live according to the coordinator: only the source can be asked for. The
            // transcoded rungs, then the encoder-made tracks (multitrack) the ingest reported.
            names = (location?.renditions.map(\.rung.name) ?? []) + (location?.tracks ?? []).prefix(StreamFacts.maxTracks)
            if !names.isEmpty { keep = .seconds(5) }
        } catch {
            names = ladders.value[path.app]?.rungs.map(\.name) ?? []
        }
        let until = ContinuousClock.now + keep
        entries.withLock { entries in
            // Gone if the table was full meanwhile: answered, not cached.
            if entries[path] != nil { entries[path] = .known(names, until: until) }
        }
        return names
    }

    /// Drops expired answers; then, while the table is full, the answer closest to expiry
    /// (the oldest of those kept as long) or, if every entry is a lookup in flight, any
    /// one of them (its callers still get their answer, it is just not cached).
    private static func makeRoom(in entries: inout [StreamPath: Entry], now: ContinuousClock.Instant) {
        entries = entries.filter {
            if case .known(_, let until) = $0.value { return until > now }
            return true
        }
        while entries.count >= capacity {
            var oldest: (path: StreamPath, until: ContinuousClock.Instant)?
            for (path, entry) in entries {
                guard case .known(_, let until) = entry else { continue }
                if let current = oldest, current.until <= until { continue }
                oldest = (path, until)
            }
            guard let victim = oldest?.path ?? entries.keys.first else { return }
            entries[victim] = nil
        }
    }
}
