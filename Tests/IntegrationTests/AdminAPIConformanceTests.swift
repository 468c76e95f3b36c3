import Foundation
import TestSupport
import Testing

extension IntegrationTests {
    /// Issue 25, item 5: the admin API against its document, by schemathesis (PyPI, in the
    /// project's virtualenv), on a node with a live publisher and viewer so that the lists it
    /// walks are not empty.
    @Suite("Admin API conformance")
    struct AdminAPIConformanceTests {
        @Test("schemathesis drives every operation of docs/openapi.yaml (but the drain, which stops the node) with and without the token, with malformed and boundary values, and statefully through the documented links: every answer is one the document lists, with the documented body")
        func schemathesis() async throws {
            try await Scenario.run("admin-conformance") { scenario in
                guard let root = TestEnvironment.repositoryRoot else { throw IntegrationFailure("the repository root is not found") }
                let st = root.appendingPathComponent(".venv/bin/st")
                try scenario.require(FileManager.default.isExecutableFile(atPath: st.path), "\(st.path) is missing: run scripts/install-deps.sh --test")
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let node = try await scenario.startNode(label: "node", arguments: ["--admin-token", SessionsTests.token])
                let publisher = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "publisher", loop: true)
                let live = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) {
                    ((try? await SessionsTests.sessions(node, "?kind=publish")) ?? []).contains { $0["path"] as? String == "live/cam" }
                }
                try scenario.require(live, "ffmpeg is not publishing: \(publisher.stderrText.suffix(300))")
                let viewer = try await scenario.openViewer(node, "live", "cam")
                try scenario.require(await viewer.waitForProgress(beyond: 0, bytes: 10_000, timeout: .seconds(10)), "the viewer got no media")

                let started = ContinuousClock.now
                // schemathesis keeps a cache in `.schemathesis/` of its working directory: the
                // scenario's, not the repository's.
                let process = try scenario.launch(
                    "sh",
                    [
                        "-c", #"cd "$1" && shift && exec "$@""#, "sh", scenario.directory.path, st.path,
                        "run", root.appendingPathComponent("docs/openapi.yaml").path,
                        "--url", "http://127.0.0.1:\(node.adminPort)",
                        "-H", "Authorization: Bearer \(SessionsTests.token)",
                        // Every check, the answer to methods the document does not list (405)
                        // included.
                        "--checks", "all",
                        // A drain ends the node (DrainTests drive it, malformed bodies included).
                        "--exclude-operation-id", "startDrain",
                        "--max-examples", "40", "--workers", "1", "--seed", "2025",
                        "--request-timeout", "10",
                    ],
                    name: "schemathesis"
                )
                let run = await process.finish(timeout: .seconds(300), startedAt: started)
                let summary = run.stdout.split(separator: "\n").suffix(30).joined(separator: "\n")
                scenario.check(run.succeeded, "schemathesis found issues (\(run.termination.map(\.description) ?? "no exit")):\n\(run.stdout.suffix(6000))")
                scenario.check(run.stdout.contains("Tested: 14"), "schemathesis did not test the 14 operations:\n\(summary)")
                // The node lived through it, and so did the sessions it did not kick.
                scenario.check(node.process.isRunning, "the node died under schemathesis")
            }
        }
    }
}
