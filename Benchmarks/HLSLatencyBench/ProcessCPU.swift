#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The node's CPU time and memory from Linux /proc, read the way FanoutBench does:
/// utime + stime of /proc/PID/stat (all threads of the process), VmRSS of /proc/PID/status.
enum ProcessCPU {
    static let ticksPerSecond: Double = {
        let value = sysconf(Int32(_SC_CLK_TCK))
        return value > 0 ? Double(value) : 100
    }()

    /// utime + stime in seconds, or nil when the process is gone.
    static func seconds(pid: Int32) -> Double? {
        guard let stat = readProcFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        // After "(comm)": state is field 3; utime and stime are fields 14 and 15 (proc(5)).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = UInt64(fields[11]), let system = UInt64(fields[12]) else { return nil }
        return Double(user + system) / ticksPerSecond
    }

    /// VmRSS in KiB.
    static func residentKiB(pid: Int32) -> Int? {
        guard let status = readProcFile("/proc/\(pid)/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return line.dropFirst("VmRSS:".count).split { $0 == " " || $0 == "\t" }.first.flatMap { Int($0) }
        }
        return nil
    }

    /// Busy seconds of the whole machine (all CPUs) from /proc/stat.
    static func machineBusySeconds() -> Double? {
        guard let stat = readProcFile("/proc/stat"), let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        let values = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        guard values.count >= 8 else { return nil }
        // user nice system idle iowait irq softirq steal
        return Double(values[0] + values[1] + values[2] + values[5] + values[6] + values[7]) / ticksPerSecond
    }

    /// This process's CPU seconds (the load generator).
    static func ownSeconds() -> Double {
        var usage = rusage()
        _ = getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// A small /proc file, read until EOF (at most 64 KiB).
    static func readProcFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<16 {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The server's figures over the measurement window.
struct CPUFigures: Codable, Sendable {
    var windowSeconds: Double
    var serverCPUSeconds: Double
    /// serverCPUSeconds / windowSeconds.
    var serverCores: Double
    var generatorCores: Double
    /// Everything else on the machine (builds would show here).
    var otherCores: Double?
    var rssStartKiB: Int
    var rssMeanKiB: Int
    var rssMaxKiB: Int
}

/// Samples the node over [from, to]: CPU at both ends, RSS once a second.
func measureServer(pid: Int32, from: ContinuousClock.Instant, to: ContinuousClock.Instant) async -> CPUFigures? {
    let clock = ContinuousClock()
    do {
        try await Task.sleep(until: from, clock: clock)
    } catch {
        return nil
    }
    guard let cpuStart = ProcessCPU.seconds(pid: pid) else { return nil }
    let generatorStart = ProcessCPU.ownSeconds()
    let machineStart = ProcessCPU.machineBusySeconds()
    let started = clock.now
    let rssStart = ProcessCPU.residentKiB(pid: pid) ?? 0
    var rss: [Int] = [rssStart]
    // One RSS sample a second; bounded by the window's length.
    while clock.now < to {
        let next = min(clock.now + .seconds(1), to)
        try? await Task.sleep(until: next, clock: clock)
        if let value = ProcessCPU.residentKiB(pid: pid) { rss.append(value) }
    }
    guard let cpuEnd = ProcessCPU.seconds(pid: pid) else { return nil }
    let window = (clock.now - started).milliseconds / 1000
    let server = cpuEnd - cpuStart
    let generator = ProcessCPU.ownSeconds() - generatorStart
    var other: Double?
    if let machineStart, let machineEnd = ProcessCPU.machineBusySeconds() {
        other = max(0, machineEnd - machineStart - server - generator) / window
    }
    return CPUFigures(
        windowSeconds: window,
        serverCPUSeconds: server,
        serverCores: server / window,
        generatorCores: generator / window,
        otherCores: other,
        rssStartKiB: rssStart,
        rssMeanKiB: rss.reduce(0, +) / max(rss.count, 1),
        rssMaxKiB: rss.max() ?? rssStart
    )
}
