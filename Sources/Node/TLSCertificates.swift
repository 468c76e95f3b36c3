import Foundation
import Logging
import Metrics
import NIOCore
import NIOSSL
import Synchronization

/// The node's TLS certificate and key (`tls`), for RTMPS and HTTPS: read from PEM files,
/// and read again on SIGHUP or when either file changes (`CertificateReloadService`). Each
/// new connection takes the context current at its accept; connections already open keep
/// theirs, so a reload drops nothing. A reload that fails (a file that does not parse, a key
/// that does not match) is logged and counted, and the old certificate stays.
final class TLSCertificates: Sendable {
    let certificateFile: String
    let keyFile: String
    private let current: Mutex<NIOSSLContext>
    private let stamps: Mutex<[Date?]>
    private let logger: Logger

    init(certificateFile: String, keyFile: String, logger: Logger) throws {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.logger = logger
        current = Mutex(try Self.load(certificateFile: certificateFile, keyFile: keyFile))
        stamps = Mutex(Self.modificationDates([certificateFile, keyFile]))
    }

    /// The context a new connection uses.
    var context: NIOSSLContext { current.withLock { $0 } }

    /// Puts TLS first in a new connection's pipeline, with the current certificate, and
    /// counts its handshake under `listener` (`rtmps`, `https`).
    func addServerHandlers(to pipeline: ChannelPipeline.SynchronousOperations, listener: String) throws {
        try pipeline.addHandler(NIOSSLServerHandler(context: context))
        try pipeline.addHandler(TLSHandshakeCounter(listener: listener))
    }

    /// Reads the files again; keeps the old context when they cannot be used.
    @discardableResult
    func reload(reason: String) -> Bool {
        stamps.withLock { $0 = Self.modificationDates([certificateFile, keyFile]) }
        do {
            let context = try Self.load(certificateFile: certificateFile, keyFile: keyFile)
            current.withLock { $0 = context }
            logger.notice("TLS certificate reloaded", metadata: ["reason": "\(reason)", "certificate": "\(certificateFile)"])
            Counter(label: "estuary_tls_reloads_total", dimensions: [("result", "loaded")]).increment()
            return true
        } catch {
            logger.error("TLS certificate not reloaded; the previous one stays", metadata: ["reason": "\(reason)", "error": "\(error)"])
            Counter(label: "estuary_tls_reloads_total", dimensions: [("result", "failed")]).increment()
            return false
        }
    }

    /// Reloads when either file's modification time changed since the last look.
    func reloadIfChanged() {
        let now = Self.modificationDates([certificateFile, keyFile])
        let changed = stamps.withLock { $0 != now }
        if changed { reload(reason: "the files changed") }
    }

    static func load(certificateFile: String, keyFile: String) throws -> NIOSSLContext {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
        } catch {
            throw TLSFileError(file: certificateFile, reason: "not a PEM certificate chain (\(error))")
        }
        guard !chain.isEmpty else { throw TLSFileError(file: certificateFile, reason: "no certificate in it") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        } catch {
            throw TLSFileError(file: keyFile, reason: "not a PEM private key (\(error))")
        }
        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key)
        )
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw TLSFileError(file: keyFile, reason: "does not go with \(certificateFile) (\(error))")
        }
    }

    private static func modificationDates(_ files: [String]) -> [Date?] {
        files.map { (try? FileManager.default.attributesOfItem(atPath: $0))?[.modificationDate] as? Date }
    }
}

/// A certificate or key file that cannot be used.
struct TLSFileError: Error, CustomStringConvertible {
    var file: String
    var reason: String
    var description: String { "\(file): \(reason)" }
}
