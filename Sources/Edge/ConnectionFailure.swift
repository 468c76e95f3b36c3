import Foundation
import NIOCore
import NIOPosix

/// One line a person can read for a failed outgoing connection: NIO's errors print every
/// address tried and errno in a nested dump (`SingleConnectionFailure(target: [IPv4]…,
/// error: connection reset (error set): Connection refused) (errno: 111))`).
enum ConnectionFailure {
    static func describe(_ error: any Error) -> String {
        if let failure = error as? NIOConnectionError {
            let reasons = failure.connectionErrors.map { describe($0.error) }
            let first = reasons.first ?? (failure.dnsAError ?? failure.dnsAAAAError).map { "cannot resolve \(failure.host): \(describe($0))" } ?? "no address to connect to"
            return "\(first) (\(failure.host):\(failure.port))"
        }
        if let io = error as? IOError {
            switch io.errnoCode {
            case 111: return "connection refused"
            case 104: return "connection reset"
            case 110: return "timed out"
            case 113, 101: return "no route to the host"
            default: return io.description.split(separator: "(").first.map { String($0).trimmingCharacters(in: .whitespaces) } ?? "\(io)"
            }
        }
        if case .connectTimeout = error as? ChannelError { return "no connection within the timeout" }
        let text = "\(error)"
        if text.contains("Connection refused") { return "connection refused" }
        if text.contains("Connection reset") { return "connection reset" }
        return String(text.prefix(160))
    }
}
