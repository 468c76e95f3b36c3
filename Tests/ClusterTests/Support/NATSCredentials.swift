import Foundation
import TestSupport

/// A NATS operator, its account and users, made by `scripts/nats-credentials.py` in a
/// temporary directory: the nats-server configuration (operator/JWT mode) and `.creds`
/// files. Fails, rather than skips, when the script cannot run: `make deps` installs
/// Python's `cryptography` into the project virtualenv `.venv/`, whose python3 runs it.
final class NATSCredentials {
    let directory: TemporaryDirectory

    /// The nats-server configuration: `operator`, `resolver: MEMORY`, the account preloaded.
    var serverConfiguration: String { directory.file("server.conf").path }
    /// The first user's credentials file (user JWT + NKey seed).
    var userCredentials: String { directory.file("estuary.creds").path }

    static let script: URL = {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.path != "/" {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
                return directory.appendingPathComponent("scripts/nats-credentials.py")
            }
            directory = directory.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: "scripts/nats-credentials.py")
    }()

    /// `init`: a new operator, account and user `estuary`.
    init() async throws {
        directory = try TemporaryDirectory(prefix: "estuary-nats-creds")
        try await run(["init", directory.url.path, "--host", "127.0.0.1"])
    }

    /// `user`: another user of the account; its `.creds` path.
    /// - Parameter expires: seconds from now (negative: already expired).
    func issueUser(_ name: String, expires: Int? = nil) async throws -> String {
        try await run(["user", directory.url.path, name] + (expires.map { ["--expires", String($0)] } ?? []))
        return directory.file("\(name).creds").path
    }

    /// Writes `text` to a file in the directory; its path.
    func write(_ name: String, _ text: String) throws -> String {
        let url = directory.file(name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    private func run(_ arguments: [String]) async throws {
        let result = try await Tool.run(Tool.python3, [Self.script.path] + arguments, in: directory.url, timeout: .seconds(30))
        guard result.succeeded else {
            throw TestFailure("\(Self.script.lastPathComponent) failed (needs .venv/bin/python3 with `cryptography`: make deps): \(result)")
        }
    }
}

/// The parts of a `.creds` file.
struct CredentialsFile {
    var jwt: String
    var seed: String

    init(contentsOf path: String) throws {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        func block(after marker: String) throws -> String {
            guard let index = lines.firstIndex(where: { $0.hasPrefix(marker) }), index + 1 < lines.count else {
                throw TestFailure("no \(marker) in \(path)")
            }
            return lines[index + 1]
        }
        jwt = try block(after: "-----BEGIN NATS USER JWT-----")
        seed = try block(after: "-----BEGIN USER NKEY SEED-----")
    }

    /// The decorated file, as nsc and the script write it.
    var text: String {
        """
        -----BEGIN NATS USER JWT-----
        \(jwt)
        ------END NATS USER JWT------

        ************************* IMPORTANT *************************
        NKEY Seed printed below can be used to sign and prove identity.
        NKEYs are sensitive and should be treated as secrets.

        -----BEGIN USER NKEY SEED-----
        \(seed)
        ------END USER NKEY SEED------

        *************************************************************

        """
    }

    /// The JWT with one character of its signature changed: the header and claims are
    /// intact, the signature no longer verifies. (The first character, so that every one
    /// of its bits is part of the signature, unlike the last base64url character's.)
    var jwtWithAlteredSignature: String {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var signature = Array(parts[2])
        signature[0] = signature[0] == "A" ? "B" : "A"
        return [parts[0], parts[1], String(signature)].joined(separator: ".")
    }
}
