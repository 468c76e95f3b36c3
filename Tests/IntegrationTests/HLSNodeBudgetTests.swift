import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// The node-wide HLS byte budget (`hlsMaxBytes`): more media than it holds is published,
    /// and the node keeps within it by shortening windows, while a viewer stays.
    @Suite("HLS node byte budget")
    struct HLSNodeBudgetTests {
        @Test("Three 2 Mbit/s streams whose HLS windows would take 23 MB, on a node with a 20 MiB HLS budget: windows shrink to three segments under pressure (never fewer) and grow back, nothing is abandoned, estuary_hls_bytes stays within the budget, and an LL-HLS viewer of each stream stays 30 s without a stall")
        func windowsShrinkWithinTheBudget() async throws {
            try await Scenario.run("hls-node-budget") { scenario in
                let limit = 20 << 20
                let media = try await MediaLibrary.shared.file(.noisyGOPAudioVideo)
                let node = try await scenario.startNode(NodeConfig(hlsMaxBytes: limit))
                let streams = ["one", "two", "three"]
                var publishers: [ChildProcess] = []
                for stream in streams {
                    publishers.append(try scenario.publish(media, to: node.rtmpURL("live", stream), name: "publisher-\(stream)", loop: true))
                }
                for stream in streams {
                    try await scenario.waitUntilLive(node, "live", stream)
                    try await scenario.waitForSegments(node, "/live/\(stream)", count: 3, timeout: .seconds(20))
                }
                let python = try TestEnvironment.python3()
                let watcher = try EnhancedRTMPTests.peer("pyav_watch.py")
                var viewers: [ChildProcess] = []
                for stream in streams {
                    viewers.append(try scenario.launch(executable: python, [watcher, "\(node.httpBase)/live/\(stream)/src/llhls.m3u8", "30"], name: "pyav-hls-\(stream)"))
                }

                // While they watch: what the node holds, and every window's length.
                var mostHeld = 0.0
                var windows: [String: [Int]] = [:]
                let deadline = ContinuousClock.now + .seconds(32)
                while ContinuousClock.now < deadline {
                    if let metrics = try? await node.metrics() {
                        mostHeld = max(mostHeld, metrics.sum("estuary_hls_bytes"))
                    }
                    for stream in streams {
                        if let playlist = try? await scenario.mediaPlaylist(node, "/live/\(stream)/src/llhls.m3u8") {
                            windows[stream, default: []].append(playlist.complete.count)
                        }
                    }
                    try await Task.sleep(for: .milliseconds(500))
                }
                scenario.note("most HLS bytes held: \(Int(mostHeld)) of \(limit); windows: \(windows)")
                scenario.check(mostHeld > 0, "estuary_hls_bytes was never recorded")
                scenario.check(mostHeld <= Double(limit), "the node held \(Int(mostHeld)) HLS bytes, over its \(limit)-byte budget")
                for stream in streams {
                    let counts = windows[stream] ?? []
                    scenario.check(counts.count >= 40, "live/\(stream): only \(counts.count) playlists read")
                    scenario.check(counts.allSatisfy { $0 >= 3 }, "live/\(stream): a window fell under three segments: \(counts)")
                    // Without pressure a window only grows, to six; a shorter one after a longer
                    // one was trimmed for the budget.
                    let steps = Array(zip(counts, counts.dropFirst()))
                    let shrank = steps.firstIndex { $1 < $0 }
                    scenario.check(shrank != nil, "live/\(stream): the window never shrank under pressure: \(counts)")
                    if let shrank {
                        scenario.check(steps[shrank...].contains { $1 > $0 }, "live/\(stream): the window never grew back: \(counts)")
                    }
                }
                for (stream, viewer) in zip(streams, viewers) {
                    try await EnhancedRTMPTests.checkStayed(scenario, viewer, "live/\(stream) over LL-HLS", width: 640, height: 360, maxWait: EnhancedRTMPTests.hlsMaxWait)
                }
                let metrics = try await node.metrics()
                scenario.check(metrics.sum("estuary_hls_segments_abandoned_total", labels: ["reason": "node_budget"]) == 0,
                               "segments were abandoned although shorter windows made room")
                for publisher in publishers {
                    scenario.check(publisher.isRunning, "a publisher ended: \(tail(publisher.stderrText, lines: 5))")
                }
            }
        }
    }
}
