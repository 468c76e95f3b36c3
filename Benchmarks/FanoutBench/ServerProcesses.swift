#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The server under test, read from Linux `/proc`: the given process ids and all their
/// descendants (nginx's master and workers). Only these processes enter the CPU and memory
/// figures, never the load generator.
struct ServerProcesses: Sendable {
    /// CPU time of one process, in clock ticks (utime + stime; all its threads included).
    typealias CPUTicks = [Int32: UInt64]

    let roots: [Int32]
    /// Roots and descendants, found by ``discover()``.
    private(set) var pids: [Int32] = []

    init(roots: [Int32]) {
        self.roots = roots
    }

    /// Clock ticks per second (`getconf CLK_TCK`, usually 100).
    static let ticksPerSecond: Double = {
        let value = sysconf(Int32(_SC_CLK_TCK))
        return value > 0 ? Double(value) : 100
    }()

    /// Finds the roots' descendants by scanning `/proc/*/stat` parent ids.
    mutating func discover() {
        var children: [Int32: [Int32]] = [:]
        for pid in Self.allPIDs() {
            guard let fields = Self.statFields(pid), fields.count > 1, let parent = Int32(fields[1]) else { continue }
            children[parent, default: []].append(pid)
        }
        var found: [Int32] = []
        var queue = self.roots.filter { Self.statFields($0) != nil }
        // Bounded: each pid is visited once and /proc lists finitely many.
        while let pid = queue.popLast() {
            guard !found.contains(pid) else { continue }
            found.append(pid)
            queue.append(contentsOf: children[pid] ?? [])
        }
        self.pids = found.sorted()
    }

    /// utime + stime of every process, in clock ticks.
    func cpuTicks() -> CPUTicks {
        var ticks: CPUTicks = [:]
        for pid in self.pids {
            // Fields after "(comm)": state is field 3, utime 14, stime 15 (proc(5)).
            guard let fields = Self.statFields(pid), fields.count > 12,
                let user = UInt64(fields[11]), let system = UInt64(fields[12])
            else { continue }
            ticks[pid] = user + system
        }
        return ticks
    }

    /// CPU seconds spent between two samples, over the processes present in both.
    static func cpuSeconds(from start: CPUTicks, to end: CPUTicks) -> Double {
        var total: UInt64 = 0
        for (pid, before) in start {
            if let after = end[pid], after >= before { total += after - before }
        }
        return Double(total) / Self.ticksPerSecond
    }

    /// The sum of VmRSS over the processes, in KiB.
    func residentKiB() -> Int {
        var total = 0
        for pid in self.pids {
            guard let status = Self.readProcFile("/proc/\(pid)/status") else { continue }
            for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
                let number = line.dropFirst("VmRSS:".count).split { $0 == " " || $0 == "\t" }.first
                total += number.flatMap { Int($0) } ?? 0
            }
        }
        return total
    }

    /// The whitespace-separated fields of /proc/PID/stat after the parenthesised command name
    /// (which may itself contain spaces), starting with the state (field 3).
    private static func statFields(_ pid: Int32) -> [Substring]? {
        guard let stat = readProcFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    private static func allPIDs() -> [Int32] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var pids: [Int32] = []
        // Bounded by the number of /proc entries.
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let pid = Int32(name) { pids.append(pid) }
        }
        return pids
    }

    /// Reads a small /proc file (they report size 0, so read until EOF), at most 64 KiB.
    static func readProcFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        // At most 16 reads of 4 KiB.
        for _ in 0..<16 {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// CPU time of the whole machine from /proc/stat, to expose load from other processes
/// (builds, tests) that would distort the server's figures.
enum MachineCPU {
    /// Busy seconds summed over all CPUs (user, nice, system, irq, softirq, steal), or nil.
    static func busySeconds() -> Double? {
        guard let stat = ServerProcesses.readProcFile("/proc/stat"),
            let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return nil }
        let values = line.split(separator: " ").dropFirst().compactMap { UInt64($0) }
        guard values.count >= 8 else { return nil }
        // user nice system idle iowait irq softirq steal
        let busy = values[0] + values[1] + values[2] + values[5] + values[6] + values[7]
        return Double(busy) / ServerProcesses.ticksPerSecond
    }
}

/// This process's own CPU time, to show whether the load generator kept up.
enum GeneratorCPU {
    static func seconds() -> Double {
        var usage = rusage()
        _ = getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// Raises the open-file soft limit to the hard limit: every viewer is a socket.
enum FileDescriptorLimit {
    /// Returns the soft limit in force afterwards.
    @discardableResult
    static func raise(toAtLeast wanted: Int) -> Int {
        var limit = rlimit()
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        guard getrlimit(resource, &limit) == 0 else { return 0 }
        if limit.rlim_cur < rlim_t(wanted) {
            limit.rlim_cur = min(limit.rlim_max, max(limit.rlim_cur, rlim_t(wanted)))
            _ = setrlimit(resource, &limit)
            _ = getrlimit(resource, &limit)
        }
        return Int(limit.rlim_cur)
    }
}
