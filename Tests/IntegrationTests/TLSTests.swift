import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension IntegrationTests {
    /// Issue 25, TLS: RTMPS and HTTPS from a certificate a CA made in the test signed, with
    /// real clients (ffmpeg over `rtmps://`, ffprobe over `rtmps://` and `https://`, curl
    /// verifying the chain), and the certificate replaced while a viewer watches.
    @Suite("TLS")
    struct TLSTests {
        /// Makes the CA (once) and a server certificate for 127.0.0.1 and localhost with `serial`.
        static func certificate(_ scenario: Scenario, serial: Int, into directory: URL) async throws -> (certificate: URL, key: URL) {
            let ca = directory.appendingPathComponent("ca.pem")
            let caKey = directory.appendingPathComponent("ca.key")
            func openssl(_ arguments: [String]) async throws {
                let run = try await scenario.run("openssl", arguments, name: "openssl", timeout: .seconds(30))
                try scenario.require(run.succeeded, "openssl \(arguments.first ?? ""): \(run)")
            }
            if !FileManager.default.fileExists(atPath: ca.path) {
                try await openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", caKey.path, "-out", ca.path, "-days", "2", "-subj", "/CN=Estuary Test CA"])
            }
            let key = directory.appendingPathComponent("server-\(serial).key")
            let request = directory.appendingPathComponent("server-\(serial).csr")
            let certificate = directory.appendingPathComponent("server-\(serial).pem")
            let extensions = directory.appendingPathComponent("server.ext")
            try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n".utf8).write(to: extensions)
            try await openssl(["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key.path, "-out", request.path, "-subj", "/CN=localhost"])
            try await openssl(["x509", "-req", "-in", request.path, "-CA", ca.path, "-CAkey", caKey.path, "-set_serial", String(serial),
                               "-out", certificate.path, "-days", "2", "-extfile", extensions.path])
            return (certificate, key)
        }

        /// The serial of the certificate a new TLS connection to `port` is shown (hex, as openssl prints it).
        static func servedSerial(_ scenario: Scenario, port: Int) async throws -> String {
            let run = try await scenario.run(
                "sh", ["-c", "openssl s_client -connect 127.0.0.1:\(port) -servername localhost </dev/null 2>/dev/null | openssl x509 -noout -serial"],
                name: "s_client", timeout: .seconds(15)
            )
            return run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// Replaces `target` with `source` in one rename, as a deployment tool would.
        static func install(_ source: URL, as target: URL) throws {
            let temporary = target.appendingPathExtension("new")
            try? FileManager.default.removeItem(at: temporary)
            try FileManager.default.copyItem(at: source, to: temporary)
            _ = rename(temporary.path, target.path)
        }

        @Test("ffmpeg publishes over rtmps://, ffprobe plays over rtmps:// and https://, curl verifies the chain against the test's CA and fetches HLS; the certificate is replaced on SIGHUP and when its files change (a broken one is refused and the old stays) while an RTMPS viewer watches 30 s without a break")
        func rtmpsAndHTTPS() async throws {
            try await Scenario.run("tls") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let pki = scenario.directory.appendingPathComponent("pki")
                try FileManager.default.createDirectory(at: pki, withIntermediateDirectories: true)
                let first = try await Self.certificate(scenario, serial: 1001, into: pki)
                let certificateFile = pki.appendingPathComponent("live.pem")
                let keyFile = pki.appendingPathComponent("live.key")
                try Self.install(first.certificate, as: certificateFile)
                try Self.install(first.key, as: keyFile)
                let ports = try await FreePorts.allocate(2)
                let (rtmpsPort, httpsPort) = (ports[0], ports[1])
                let node = try await scenario.startNode(label: "node", arguments: [
                    "--rtmps-port", String(rtmpsPort), "--https-port", String(httpsPort),
                    "--tls-certificate", certificateFile.path, "--tls-key", keyFile.path,
                ])
                let ca = pki.appendingPathComponent("ca.pem").path

                // curl checks the chain (CA, SAN 127.0.0.1) and talks to the API over HTTPS.
                let health = try await scenario.run("curl", ["-sS", "--cacert", ca, "https://127.0.0.1:\(httpsPort)/healthz"], name: "curl-health", timeout: .seconds(15))
                scenario.check(health.succeeded && health.stdout.contains("ok"), "curl https://…/healthz with the test CA: \(health)")
                let untrusted = try await scenario.run("curl", ["-sS", "https://127.0.0.1:\(httpsPort)/healthz"], name: "curl-untrusted", timeout: .seconds(15))
                scenario.check(!untrusted.succeeded, "curl without the test CA trusted the certificate")

                // ffmpeg publishes over RTMPS.
                let publisher = try scenario.publish(media, to: "rtmps://127.0.0.1:\(rtmpsPort)/live/cam", name: "publisher", loop: true)
                try await scenario.waitUntilLive(node, "live", "cam")
                scenario.check(try await Self.servedSerial(scenario, port: rtmpsPort) == "serial=03E9", "the RTMPS listener's certificate")

                // Played over HTTPS: HTTP-FLV (ffprobe) and HLS (curl).
                if let report = try await scenario.probeLive("https://127.0.0.1:\(httpsPort)/live/cam.flv", name: "probe-https", seconds: 3) {
                    scenario.checkLivePlayback(report, "HTTP-FLV over HTTPS", minVideoPackets: 40, width: media.width)
                }
                let master = try await scenario.run("curl", ["-sS", "--cacert", ca, "https://127.0.0.1:\(httpsPort)/live/cam/index.m3u8"], name: "curl-hls", timeout: .seconds(15))
                scenario.check(master.succeeded && master.stdout.contains("#EXTM3U"), "the HLS master playlist over HTTPS: \(master)")

                // An RTMPS viewer watches 30 s while the certificate changes under it.
                let watcher = Task {
                    try await scenario.run(
                        "ffprobe", ["-v", "error", "-show_entries", "stream=index,codec_type,codec_name,width,height,sample_rate:packet=stream_index,dts,flags",
                                    "-of", "json", "-read_intervals", "%+30", "rtmps://127.0.0.1:\(rtmpsPort)/live/cam"],
                        name: "rtmps-watcher", timeout: .seconds(60)
                    )
                }
                try await Task.sleep(for: .seconds(3))

                // SIGHUP: new connections get the new certificate.
                let second = try await Self.certificate(scenario, serial: 2002, into: pki)
                try Self.install(second.key, as: keyFile)
                try Self.install(second.certificate, as: certificateFile)
                node.process.send(signal: SIGHUP)
                let reloaded = await eventually(timeout: .seconds(10), interval: .milliseconds(300)) {
                    (try? await Self.servedSerial(scenario, port: httpsPort)) == "serial=07D2"
                }
                let shown = (try? await Self.servedSerial(scenario, port: httpsPort)) ?? "nothing"
                scenario.check(reloaded, "after SIGHUP the HTTPS listener still shows \(shown)")
                scenario.check(try await Self.servedSerial(scenario, port: rtmpsPort) == "serial=07D2", "after SIGHUP the RTMPS listener's certificate")

                // A broken file is refused; the certificate in use stays.
                try Data("-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n".utf8).write(to: pki.appendingPathComponent("broken.pem"))
                try Self.install(pki.appendingPathComponent("broken.pem"), as: certificateFile)
                node.process.send(signal: SIGHUP)
                let refused = await eventually(timeout: .seconds(10), interval: .milliseconds(200)) { node.log.contains("TLS certificate not reloaded") }
                scenario.check(refused, "a broken certificate file was not reported")
                scenario.check(try await Self.servedSerial(scenario, port: httpsPort) == "serial=07D2", "a broken certificate replaced the good one")

                // A change to the files is picked up without a signal.
                let third = try await Self.certificate(scenario, serial: 3003, into: pki)
                try Self.install(third.key, as: keyFile)
                try Self.install(third.certificate, as: certificateFile)
                let polled = await eventually(timeout: .seconds(15), interval: .milliseconds(300)) {
                    (try? await Self.servedSerial(scenario, port: httpsPort)) == "serial=0BBB"
                }
                scenario.check(polled, "a changed certificate file was not picked up")

                // The viewer that was there all along.
                let watched = try await watcher.value
                scenario.check(watched.succeeded, "the RTMPS viewer across the reloads: \(watched)")
                if watched.succeeded, let report = try? ProbeReport.decode(watched.stdout) {
                    scenario.checkLivePlayback(report, "the RTMPS viewer across the reloads", minVideoPackets: 650, width: media.width)
                }
                let metrics = try await node.metrics()
                scenario.check(metrics.sum("estuary_tls_handshakes_total", labels: ["listener": "rtmps", "result": "completed"]) >= 3
                               && metrics.sum("estuary_tls_handshakes_total", labels: ["listener": "https", "result": "completed"]) >= 3,
                               "estuary_tls_handshakes_total does not count the handshakes")
                scenario.check(metrics.sum("estuary_tls_reloads_total", labels: ["result": "failed"]) >= 1, "the failed reload is not counted")
                _ = await publisher.stop()
            }
        }

        @Test("Headless Chromium plays LL-HLS over https:// when it trusts the test's CA (served in the chain), and refuses the same page without that trust", .enabled(if: BrowserSupport.missing == nil, "needs chromium and Playwright for Python"))
        func chromiumOverHTTPS() async throws {
            try await Scenario.run("tls-chromium") { scenario in
                let media = try await MediaLibrary.shared.file(.gopAudioVideo)
                let script = try #require(BrowserSupport.script)
                let pki = scenario.directory.appendingPathComponent("pki")
                try FileManager.default.createDirectory(at: pki, withIntermediateDirectories: true)
                let issued = try await Self.certificate(scenario, serial: 4242, into: pki)
                // The chain as a deployment serves it: the server's certificate, then the CA's.
                let chain = pki.appendingPathComponent("fullchain.pem")
                try (try Data(contentsOf: issued.certificate) + Data(contentsOf: pki.appendingPathComponent("ca.pem"))).write(to: chain)
                let spki = try await scenario.run(
                    "sh", ["-c", "openssl x509 -in '\(pki.appendingPathComponent("ca.pem").path)' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"],
                    name: "spki", timeout: .seconds(15)
                ).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                try scenario.require(spki.count == 44, "the CA's SPKI hash: '\(spki)'")
                let httpsPort = try await FreePorts.allocate(1)[0]
                let node = try await scenario.startNode(label: "node", arguments: [
                    "--https-port", String(httpsPort), "--tls-certificate", chain.path, "--tls-key", issued.key.path,
                ])
                _ = try scenario.publish(media, to: node.rtmpURL("live", "cam"), name: "publisher", loop: true)
                let url = "https://127.0.0.1:\(httpsPort)/live/cam/llhls.m3u8"
                let ready = await eventually(timeout: .seconds(20), interval: .milliseconds(500)) {
                    (try? await scenario.run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", pki.appendingPathComponent("ca.pem").path, url], name: "curl-llhls", timeout: .seconds(5)))?.stdout == "200"
                }
                try scenario.require(ready, "the LL-HLS playlist is not served over https")
                // Chromium's native player needs a few complete segments to start (status.md).
                let curl = ["-s", "--cacert", pki.appendingPathComponent("ca.pem").path]
                let master = try await scenario.run("curl", curl + [url], name: "curl-master", timeout: .seconds(5)).stdout
                let mediaName = try #require(master.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty }, "no media playlist in \(master)")
                let mediaURL = "https://127.0.0.1:\(httpsPort)/live/cam/\(mediaName)"
                let segments = await eventually(timeout: .seconds(30), interval: .milliseconds(500)) {
                    let playlist = (try? await scenario.run("curl", curl + [mediaURL], name: "curl-media", timeout: .seconds(5)))?.stdout ?? ""
                    return playlist.components(separatedBy: "#EXTINF").count - 1 >= 3
                }
                try scenario.require(segments, "the media playlist \(mediaURL) did not reach three segments")
                let trusted = try await ChildProcess.run(
                    TestEnvironment.python3(),
                    [script.path, url, scenario.file("https-trusted.png").path, "--advance", "3", "--within", "6", "--trust-spki", spki],
                    name: "chromium-https", directory: scenario.directory, timeout: .seconds(60)
                )
                scenario.check(trusted.succeeded, "Chromium trusting the test's CA did not play LL-HLS over https: \(trusted)\nstdout: \(trusted.stdout)")
                let untrusted = try await ChildProcess.run(
                    TestEnvironment.python3(),
                    [script.path, url, scenario.file("https-untrusted.png").path, "--advance", "3", "--within", "6", "--start-timeout", "8"],
                    name: "chromium-https-untrusted", directory: scenario.directory, timeout: .seconds(60)
                )
                scenario.check(untrusted.termination == .exited(1), "Chromium without the CA's trust was expected to fail to play (exit 1): \(untrusted)")
            }
        }

        @Test("A TLS port without a certificate, a certificate file that does not parse, and two listeners on one port are refused at --check-config")
        func badTLSConfigurations() async throws {
            try await Scenario.run("tls-config") { scenario in
                let garbage = scenario.file("garbage.pem")
                try Data("not a certificate".utf8).write(to: garbage)
                for (arguments, expected) in [
                    (["--rtmps-port", "1936"], "rtmpsPort and httpsPort need tls"),
                    (["--https-port", "8443", "--tls-certificate", garbage.path, "--tls-key", garbage.path], "not a PEM certificate chain"),
                    (["--rtmp-port", "8080", "--http-port", "8080"], "rtmpPort and httpPort are both 8080"),
                    (["--rtmp-port", "99999"], "rtmpPort must be within 0…65535, got 99999"),
                ] {
                    try await scenario.checkConfigFails(arguments, saying: expected)
                }
            }
        }
    }
}
