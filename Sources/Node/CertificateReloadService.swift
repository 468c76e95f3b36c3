import Logging
import ServiceLifecycle
import UnixSignals

/// Reloads the TLS certificate (`TLSCertificates`) on SIGHUP and when its files change
/// (looked at every `pollInterval`). SIGHUP is trapped by every node, with TLS or without,
/// so a stray hangup never stops a server; without TLS it is logged and nothing else.
struct CertificateReloadService: Service {
    let certificates: TLSCertificates?
    let logger: Logger
    var pollInterval: Duration = .seconds(2)

    func run() async {
        let certificates = certificates
        let logger = logger
        let pollInterval = pollInterval
        // Both loops end when the group stops (graceful shutdown cancels them).
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in await UnixSignalsSequence(trapping: .sighup) {
                        if let certificates {
                            certificates.reload(reason: "SIGHUP")
                        } else {
                            // SIGHUP also reloads the configuration file (`ConfigurationReloader`),
                            // which logs what it did.
                            logger.debug("SIGHUP: no TLS certificate to reload")
                        }
                    }
                }
                if let certificates {
                    group.addTask {
                        while !Task.isCancelled {
                            try? await Task.sleep(for: pollInterval)
                            certificates.reloadIfChanged()
                        }
                    }
                }
                await group.waitForAll()
            }
        }
    }
}
