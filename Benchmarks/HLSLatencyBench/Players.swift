/// A video frame as a player received it.
struct FrameArrival: Sendable {
    var pts: Int64
    var dts: Int64
    var isKeyframe: Bool
    /// When the playlist response that first listed the frame's part (or segment) arrived.
    var availableAt: ContinuousClock.Instant
    /// When the part (or segment) itself had been downloaded.
    var fetchedAt: ContinuousClock.Instant
    var unit: PartKey
}

/// A part (LL-HLS) or segment (classic; index 0) as a player saw it appear.
struct UnitArrival: Sendable {
    var key: PartKey
    var availableAt: ContinuousClock.Instant
    /// Parts or segments that were new in the same playlist response (1 in steady state).
    var newInResponse: Int
    var samples: [FragmentedMP4.Sample]
}

struct PlayerResult: Sendable {
    var frames: [FrameArrival] = []
    var units: [UnitArrival] = []
    /// Parts or segments already listed when the player joined (not measured).
    var preexisting = 0
    var requests = 0
    /// Playlist responses that listed nothing new (blocking timeouts, early answers).
    var emptyResponses = 0
    var errors: [String] = []
    /// From the last playlist: PART-TARGET (LL-HLS) and EXT-X-TARGETDURATION, seconds.
    var partTarget: Double?
    var targetDuration: Double?
}

/// Shared by the players: wait (bounded) for a playlist to exist.
private func waitForPlaylist(
    _ session: inout HTTPSession,
    path: String,
    until stopAt: ContinuousClock.Instant,
    ready: (MediaPlaylist) -> Bool
) async throws -> MediaPlaylist? {
    let clock = ContinuousClock()
    while clock.now < stopAt {
        let response = try await session.get(path)
        if response.status == 200 {
            let playlist = MediaPlaylist(response.text)
            if ready(playlist) { return playlist }
        }
        try await Task.sleep(for: .milliseconds(100))
    }
    return nil
}

/// The init segment named by the LL-HLS playlist's EXT-X-MAP, parsed.
private func loadVideoTrack(_ session: inout HTTPSession, base: String, map: String?) async throws -> FragmentedMP4.VideoTrack {
    guard let map else { throw BenchError.message("LL-HLS playlist has no EXT-X-MAP") }
    let response = try await session.get(base + map)
    guard response.status == 200 else { throw BenchError.message("GET \(map): HTTP \(response.status)") }
    return try FragmentedMP4.videoTrack(initSegment: response.body)
}

/// A measuring player: plays until `stopAt`; errors after the run was closed do not count.
protocol Player: Sendable {
    var stopAt: ContinuousClock.Instant { get }
    var registry: ConnectionRegistry { get }
    func play(_ session: inout HTTPSession, result: inout PlayerResult) async throws
}

extension Player {
    func run(_ session: inout HTTPSession) async -> PlayerResult {
        var result = PlayerResult()
        do {
            try await play(&session, result: &result)
        } catch {
            if !registry.isClosed, ContinuousClock().now < stopAt { result.errors.append("\(error)") }
        }
        result.requests = session.requests
        return result
    }
}

/// An LL-HLS player as hls.js runs in low-latency mode: blocking playlist reloads for the
/// part after the last one it has (`_HLS_msn`/`_HLS_part`), then a download of every newly
/// listed part, whose fMP4 `moof/traf` gives the timestamps of its video samples.
struct LowLatencyPlayer: Player {
    /// `/app/name/src/`.
    let base: String
    let stopAt: ContinuousClock.Instant
    let registry: ConnectionRegistry

    func play(_ session: inout HTTPSession, result: inout PlayerResult) async throws {
        let clock = ContinuousClock()
        guard var playlist = try await waitForPlaylist(&session, path: base + "llhls.m3u8", until: stopAt, ready: { !$0.parts.isEmpty && $0.map != nil })
        else { return }
        var map = playlist.map
        var track = try await loadVideoTrack(&session, base: base, map: map)
        var seen = Set(playlist.parts.map(\.key))
        result.preexisting = seen.count
        // Bounded by stopAt: every blocking reload returns within the server's timeout, and
        // the run closes the connection at its end.
        while clock.now < stopAt, !playlist.ended {
            let next = playlist.nextPart
            let response = try await session.get("\(base)llhls.m3u8?_HLS_msn=\(next.sequence)&_HLS_part=\(next.index)")
            guard response.status == 200 else {
                result.errors.append("blocking reload \(next.sequence).\(next.index): HTTP \(response.status)")
                try await Task.sleep(for: .milliseconds(100))
                if let plain = try await waitForPlaylist(&session, path: base + "llhls.m3u8", until: stopAt, ready: { !$0.parts.isEmpty }) {
                    playlist = plain
                }
                continue
            }
            let fresh = MediaPlaylist(response.text)
            result.partTarget = fresh.partTarget ?? result.partTarget
            result.targetDuration = fresh.targetDuration ?? result.targetDuration
            if fresh.map != map, fresh.map != nil {
                map = fresh.map
                track = try await loadVideoTrack(&session, base: base, map: map)
            }
            let newParts = fresh.parts.filter { !seen.contains($0.key) }
            if newParts.isEmpty {
                result.emptyResponses += 1
                if fresh.nextPart == next { try await Task.sleep(for: .milliseconds(20)) }
            }
            for part in newParts {
                seen.insert(part.key)
                let download = try await session.get(base + part.uri)
                guard download.status == 200 else {
                    result.errors.append("GET \(part.uri): HTTP \(download.status)")
                    continue
                }
                let samples = try FragmentedMP4.videoSamples(in: download.body, track: track)
                result.units.append(UnitArrival(key: part.key, availableAt: response.receivedAt, newInResponse: newParts.count, samples: samples))
                for sample in samples {
                    result.frames.append(FrameArrival(
                        pts: sample.pts, dts: sample.dts, isKeyframe: sample.isKeyframe,
                        availableAt: response.receivedAt, fetchedAt: download.receivedAt, unit: part.key
                    ))
                }
            }
            playlist = fresh
        }
    }
}

/// A classic HLS player without blocking reload: polls `index.m3u8` every `interval`.
/// When segment N appears its frames are available; which frames those are comes from
/// the fMP4 segment `segN.m4s` of the LL-HLS variant, which the segmenter cuts at the same
/// keyframes under the same media sequence number.
struct ClassicPlayer: Player {
    let base: String
    let stopAt: ContinuousClock.Instant
    let registry: ConnectionRegistry
    let interval: Duration

    func play(_ session: inout HTTPSession, result: inout PlayerResult) async throws {
        let clock = ContinuousClock()
        guard let llhls = try await waitForPlaylist(&session, path: base + "llhls.m3u8", until: stopAt, ready: { $0.map != nil })
        else { return }
        let track = try await loadVideoTrack(&session, base: base, map: llhls.map)
        var seen: Set<Int> = []
        var joined = false
        var nextPoll = clock.now
        while clock.now < stopAt {
            let response = try await session.get(base + "index.m3u8")
            if response.status == 200 {
                let playlist = MediaPlaylist(response.text)
                result.targetDuration = playlist.targetDuration ?? result.targetDuration
                let fresh = playlist.segments.filter { !seen.contains($0.sequence) }
                for segment in fresh {
                    seen.insert(segment.sequence)
                    guard joined else {
                        result.preexisting += 1
                        continue
                    }
                    let name = segment.uri.hasSuffix(".ts") ? String(segment.uri.dropLast(3)) + ".m4s" : segment.uri
                    let download = try await session.get(base + name)
                    guard download.status == 200 else {
                        result.errors.append("GET \(name): HTTP \(download.status)")
                        continue
                    }
                    let key = PartKey(sequence: segment.sequence, index: 0)
                    let samples = try FragmentedMP4.videoSamples(in: download.body, track: track)
                    result.units.append(UnitArrival(key: key, availableAt: response.receivedAt, newInResponse: fresh.count, samples: samples))
                    for sample in samples {
                        result.frames.append(FrameArrival(
                            pts: sample.pts, dts: sample.dts, isKeyframe: sample.isKeyframe,
                            availableAt: response.receivedAt, fetchedAt: download.receivedAt, unit: key
                        ))
                    }
                }
                joined = true
                if playlist.ended { break }
            }
            nextPoll += interval
            let now = clock.now
            if nextPoll < now { nextPoll = now }  // no burst of catch-up polls
            try await Task.sleep(until: nextPoll, tolerance: .milliseconds(1), clock: clock)
        }
    }
}

/// One of the N load viewers: blocking reload and download of every new part, no parsing.
struct LightViewer: Sendable {
    struct Result: Sendable {
        var parts: [(key: PartKey, availableAt: ContinuousClock.Instant)] = []
        var requests = 0
        var bytes = 0
        var errors: [String] = []
    }

    let base: String
    let stopAt: ContinuousClock.Instant
    let registry: ConnectionRegistry

    func run(_ session: inout HTTPSession) async -> Result {
        var result = Result()
        do {
            try await play(&session, result: &result)
        } catch {
            if !registry.isClosed, ContinuousClock().now < stopAt { result.errors.append("\(error)") }
        }
        result.requests = session.requests
        result.bytes = session.bytesReceived
        return result
    }

    private func play(_ session: inout HTTPSession, result: inout Result) async throws {
        let clock = ContinuousClock()
        guard var playlist = try await waitForPlaylist(&session, path: base + "llhls.m3u8", until: stopAt, ready: { !$0.parts.isEmpty })
        else { return }
        var seen = Set(playlist.parts.map(\.key))
        while clock.now < stopAt, !playlist.ended {
            let next = playlist.nextPart
            let response = try await session.get("\(base)llhls.m3u8?_HLS_msn=\(next.sequence)&_HLS_part=\(next.index)")
            guard response.status == 200 else {
                result.errors.append("HTTP \(response.status)")
                try await Task.sleep(for: .milliseconds(100))
                if let plain = try await waitForPlaylist(&session, path: base + "llhls.m3u8", until: stopAt, ready: { !$0.parts.isEmpty }) {
                    playlist = plain
                }
                continue
            }
            let fresh = MediaPlaylist(response.text)
            let newParts = fresh.parts.filter { !seen.contains($0.key) }
            if newParts.isEmpty, fresh.nextPart == next { try await Task.sleep(for: .milliseconds(20)) }
            for part in newParts {
                seen.insert(part.key)
                result.parts.append((part.key, response.receivedAt))
                let download = try await session.get(base + part.uri)
                if download.status != 200 { result.errors.append("part HTTP \(download.status)") }
            }
            playlist = fresh
        }
    }
}
