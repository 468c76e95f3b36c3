import Foundation
import Subprocess
import SystemPackage

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one child process cost, as the kernel accounted it, and how long it ran by the wall
/// clock.
struct ProcessCost {
    var wallSeconds: Double
    var cpuSeconds: Double
    /// Peak resident set size in bytes: the child's high-water mark (`VmHWM`), read while
    /// it runs.
    var peakResidentBytes: Int
    var exitStatus: Int32
}

/// Runs the measured programs (this benchmark's own pipeline, the ffmpeg CLI), one at a
/// time, with swift-subprocess.
enum MeasuredProcess {
    /// Runs `path arguments…` to its end with this process's stdout and stderr, and returns
    /// its cost: the growth of `getrusage(RUSAGE_CHILDREN)` across the run, which counts
    /// children once reaped (runs are one after another, so the growth is this child's).
    static func run(_ path: String, _ arguments: [String]) async throws -> ProcessCost {
        let before = usage()
        let clock = ContinuousClock()
        let start = clock.now
        let result = try await Subprocess.run(
            .path(FilePath(path)), arguments: Arguments(arguments),
            input: .none, output: .currentStandardOutput, error: .currentStandardError
        ) { execution in
            // `/proc/<pid>/status` keeps VmHWM until the child exits; the last reading is
            // within 50 ms of its end, and the mark only grows.
            var peak = 0
            while let mark = highWaterMark(of: execution.processIdentifier.value) {
                peak = max(peak, mark)
                try? await Task.sleep(for: .milliseconds(50))
            }
            return peak
        }
        let wall = clock.now - start
        let after = usage()
        func seconds(_ value: timeval) -> Double { Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }
        let status: Int32 = switch result.terminationStatus {
        case .exited(let code): code
        case .signaled(let signal): 128 + signal
        }
        return ProcessCost(
            wallSeconds: Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18,
            cpuSeconds: (seconds(after.ru_utime) + seconds(after.ru_stime)) - (seconds(before.ru_utime) + seconds(before.ru_stime)),
            peakResidentBytes: result.closureResult,
            exitStatus: status
        )
    }

    /// VmHWM of a running process in bytes; nil once it has exited.
    private static func highWaterMark(of pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
              let kib = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        return kib * 1024
    }

    private static func usage() -> rusage {
        var value = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &value)
        return value
    }
}
