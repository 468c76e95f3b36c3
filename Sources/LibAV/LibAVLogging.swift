import CLibAVLog
import CFFmpeg
import Logging
import Synchronization

/// Sends what libav and its codecs (libx264, the H.264 decoder, the AAC encoder) log into
/// the node's own logs, instead of libav's default of writing to stderr.
///
/// Levels are mapped for an operator's eyes: libav's "errors" are mostly about one bad
/// input frame, which the transcoder already counts and reports, so they become warnings;
/// its info lines (x264's end-of-stream summaries) become debug. A line repeated
/// back to back (a damaged stream makes the decoder say the same thing per macroblock
/// row) is logged once, followed by a count.
public enum LibAVLogging {
    private struct State {
        var logger: Logger?
        var last: (component: String, message: String)?
        var repeats = 0
    }

    private static let state = Mutex(State())

    /// Installs the routing. libav's level follows `logger`'s: libav's info lines are
    /// produced only when the logger shows debug, its verbose ones only at trace.
    public static func bootstrap(_ logger: Logger) {
        state.withLock { $0.logger = logger }
        let level: Int32
        switch logger.logLevel {
        case .trace: level = AV_LOG_DEBUG
        case .debug: level = AV_LOG_INFO
        default: level = AV_LOG_WARNING
        }
        estuary_av_log_install(sink, level)
    }

    private static let sink: @convention(c) (Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Void = { level, component, message in
        guard let message else { return }
        let text = String(cString: message)
        let name = component.map { String(cString: $0) } ?? ""
        let (logger, repeated): (Logger?, Int) = state.withLock { state in
            if let last = state.last, last.component == name, last.message == text {
                state.repeats += 1
                return (nil, 0)
            }
            defer {
                state.last = (name, text)
                state.repeats = 0
            }
            return (state.logger, state.repeats)
        }
        guard let logger, !text.isEmpty else { return }
        if repeated > 0 {
            logger.log(level: LibAVLogging.level(level), "last libav message repeated \(repeated) times", metadata: ["libav": "\(name)"])
        }
        logger.log(level: LibAVLogging.level(level), "\(text)", metadata: ["libav": "\(name)"])
    }

    static func level(_ level: Int32) -> Logger.Level {
        switch level {
        case ...AV_LOG_FATAL: .critical
        case ...AV_LOG_WARNING: level <= AV_LOG_ERROR ? .warning : .notice
        case ...AV_LOG_INFO: .debug
        default: .trace
        }
    }
}
