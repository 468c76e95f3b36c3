#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one child process cost, as the kernel accounted it (`wait4`'s rusage), and how long
/// it ran by the wall clock.
struct ProcessCost {
    var wallSeconds: Double
    var cpuSeconds: Double
    /// Peak resident set size in bytes (`ru_maxrss`).
    var peakResidentBytes: Int
    var exitStatus: Int32
}

enum ChildProcess {
    enum Failure: Error, CustomStringConvertible {
        case spawn(String, Int32)
        case wait(Int32)

        var description: String {
            switch self {
            case .spawn(let path, let code): "posix_spawn(\(path)) failed: \(String(cString: strerror(code)))"
            case .wait(let code): "wait4 failed: \(String(cString: strerror(code)))"
            }
        }
    }

    /// Runs `path arguments…` to its end with the parent's stdin/stdout/stderr and returns
    /// its cost. The child's rusage covers only that child (and its reaped children).
    static func run(_ path: String, _ arguments: [String]) throws -> ProcessCost {
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let clock = ContinuousClock()
        let start = clock.now
        let spawned = argv.withUnsafeBufferPointer { buffer -> Int32 in
            guard let base = buffer.baseAddress else { return EINVAL }
            return posix_spawn(&pid, path, nil, nil, base, environ)
        }
        guard spawned == 0 else { throw Failure.spawn(path, spawned) }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw Failure.wait(errno) }
        }
        let wall = clock.now - start
        func seconds(_ value: timeval) -> Double { Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }
        return ProcessCost(
            wallSeconds: Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18,
            cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime),
            peakResidentBytes: Int(usage.ru_maxrss) * 1024,
            exitStatus: status
        )
    }
}
