import Media
import Metrics
import ServiceLifecycle
import Session

/// Per-stream metrics, sampled every `interval` (5 s) from the registry's live hubs (sources
/// and rungs) and the session table, for dashboards:
///
/// - `estuary_stream_ingest_bits_per_second{stream}` and
///   `estuary_stream_video_frames_per_second{stream}`: what the stream took in over the last
///   interval;
/// - `estuary_stream_viewers{stream, protocol}`: its viewers by protocol (forwards included,
///   as `forward`);
/// - `estuary_stream_viewer_bytes_out{stream}`: the bytes its current viewers were sent.
///
/// A stream's series go when it ends. Bounded by the node's streams (`maxStreams` and their
/// rungs) times the protocols.
struct StreamMetricsSampler: Service {
    let registry: StreamRegistry
    let sessions: SessionTable
    var interval: Duration = .seconds(5)

    func run() async {
        await cancelWhenGracefulShutdown {
            var state = State()
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled else { break }
                await sample(&state)
            }
            state.destroyAll()
        }
    }

    struct State {
        var previous: [String: StreamHub.Statistics] = [:]
        var gauges: [String: [String: Gauge]] = [:]

        mutating func set(_ stream: String, _ key: String, label: String, dimensions: [(String, String)], to value: Double) {
            if gauges[stream]?[key] == nil {
                gauges[stream, default: [:]][key] = Gauge(label: label, dimensions: [("stream", stream)] + dimensions)
            }
            gauges[stream]?[key]?.record(value)
        }

        mutating func forget(except live: Set<String>) {
            for (stream, series) in gauges where !live.contains(stream) {
                for gauge in series.values { gauge.destroy() }
                gauges[stream] = nil
            }
            previous = previous.filter { live.contains($0.key) }
        }

        mutating func destroyAll() {
            forget(except: [])
        }
    }

    func sample(_ state: inout State) async {
        let hubs = await registry.streams
        let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18
        let viewers = sessions.viewerTotals()
        var live: Set<String> = []
        for (path, hub) in hubs {
            let stream = "\(path)"
            live.insert(stream)
            let now = hub.statistics
            if let before = state.previous[stream] {
                state.set(stream, "ingest", label: "estuary_stream_ingest_bits_per_second", dimensions: [],
                          to: Double(max(0, now.bytesIn - before.bytesIn)) * 8 / seconds)
                state.set(stream, "fps", label: "estuary_stream_video_frames_per_second", dimensions: [],
                          to: Double(max(0, now.videoFramesIn - before.videoFramesIn)) / seconds)
            }
            state.previous[stream] = now
            let byProtocol = viewers[stream]?.byProtocol ?? [:]
            // Every protocol seen on the stream so far keeps its series (0 when its viewers left).
            let known = Set((state.gauges[stream] ?? [:]).keys.filter { $0.hasPrefix("viewers:") }.map { String($0.dropFirst(8)) })
            for name in known.union(byProtocol.keys) {
                state.set(stream, "viewers:\(name)", label: "estuary_stream_viewers", dimensions: [("protocol", name)], to: Double(byProtocol[name] ?? 0))
            }
            state.set(stream, "bytesOut", label: "estuary_stream_viewer_bytes_out", dimensions: [], to: Double(viewers[stream]?.bytesOut ?? 0))
            // A slow viewer's queue overflowing: it skipped to the next keyframe (the stream's
            // total since it started, every subscriber's; a rising line is viewers who cannot keep up).
            state.set(stream, "skips", label: "estuary_stream_viewer_keyframe_skips", dimensions: [], to: Double(now.viewerSkips))
            state.set(stream, "dropped", label: "estuary_stream_viewer_dropped_frames", dimensions: [], to: Double(now.viewerDroppedFrames))
        }
        state.forget(except: live)
    }
}
