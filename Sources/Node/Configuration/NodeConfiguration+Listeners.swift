import Foundation
import NIOCore
import RTMP

extension NodeConfiguration {
    /// Every listening port is a TCP port (0 picks a free one), no two listeners share one,
    /// and the TLS listeners have a certificate.
    func validatePorts() throws {
        var ports: [(String, Int)] = [("rtmpPort", rtmp.port), ("httpPort", httpPort), ("adminPort", adminPort)]
        if let rtmpsPort { ports.append(("rtmpsPort", rtmpsPort)) }
        if let httpsPort { ports.append(("httpsPort", httpsPort)) }
        for (name, port) in ports where !(0...65535).contains(port) {
            throw ConfigurationError.invalidValue("\(name) must be within 0…65535, got \(port)")
        }
        if let srtPort, !(0...65535).contains(srtPort) {
            throw ConfigurationError.invalidValue("srtPort must be within 0…65535, got \(srtPort)")
        }
        let fixed = ports.filter { $0.1 != 0 }
        for (index, (name, port)) in fixed.enumerated() {
            if let other = fixed[..<index].first(where: { $0.1 == port }) {
                throw ConfigurationError.invalidValue("\(other.0) and \(name) are both \(port): each listener needs its own port")
            }
        }
        if rtmpsPort != nil || httpsPort != nil, tlsCertificateFile == nil || tlsKeyFile == nil {
            throw ConfigurationError.invalidValue("rtmpsPort and httpsPort need tls (certificateFile and keyFile, or --tls-certificate and --tls-key)")
        }
    }
}

extension NodeConfiguration {
    /// A listening address: an IPv4 or IPv6 literal, or a host name the system resolves
    /// (`localhost`); `999.1.1.1` would otherwise be tried as a name at bind time.
    static func bindAddress(_ value: String, key: String) throws(ConfigurationError) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if (try? SocketAddress(ipAddress: trimmed, port: 0)) != nil { return trimmed }
        let looksNumeric = !trimmed.isEmpty && trimmed.allSatisfy { $0.isNumber || $0 == "." }
        guard !looksNumeric, !trimmed.isEmpty, trimmed.utf8.count <= 253,
              (try? SocketAddress.makeAddressResolvingHost(trimmed, port: 0)) != nil else {
            throw .invalidValue("\(key): '\(value.prefix(80))' is not an address of this machine's (an IPv4 or IPv6 address, or a name that resolves)")
        }
        return trimmed
    }
}
