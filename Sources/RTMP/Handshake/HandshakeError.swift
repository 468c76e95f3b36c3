/// Errors thrown by ``ServerHandshake`` and ``ClientHandshake``.
public enum HandshakeError: Error, Equatable, Sendable {
    /// C0/S0 carried a version other than 3. RTMPE (6, 8, 9) is not supported; nginx-rtmp and SRS
    /// reject it the same way.
    case unsupportedVersion(UInt8)
    /// The server's S1 carried a valid digest but its S2 digest did not verify against our C1.
    case invalidDigest
}
