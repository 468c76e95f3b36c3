import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `--log-format json`: one JSON object per line on stderr, for a log pipeline. The line's
/// metadata are its fields (`session`, `path`, `protocol`, `from`, `reason`, `stream`,
/// `conn`, …), beside `time` (ISO 8601 with milliseconds, UTC), `level`, `label` and
/// `message`; nested metadata stay JSON values. Each line is one write.
struct JSONLogHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    let label: String

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: Any] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { _, new in new }) {
            fields[key] = Self.json(value)
        }
        if let error = event.error { fields["error"] = "\(error)" }
        fields["time"] = Date().formatted(Self.time)
        fields["level"] = event.level.rawValue
        fields["label"] = label
        fields["message"] = event.message.description
        guard var data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        data.append(0x0A)
        Self.lock.withLock { _ in
            data.withUnsafeBytes { bytes in
                var offset = 0
                var attempts = 0
                // Bounded: a write that makes no progress (stderr closed) gives the line up.
                while offset < bytes.count, attempts < 64, let base = bytes.baseAddress {
                    attempts += 1
                    let written = write(2, base + offset, bytes.count - offset)
                    if written <= 0 {
                        guard written < 0, errno == EINTR else { break }
                        continue
                    }
                    offset += written
                }
            }
        }
    }

    private static let lock = Mutex(())
    private static let time = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let string): string
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(json)
        case .dictionary(let dictionary): dictionary.mapValues(json)
        }
    }
}
