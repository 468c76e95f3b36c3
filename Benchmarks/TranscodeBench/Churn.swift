import ArgumentParser
import Foundation
import LibAV
import Logging
import Transcode

#if canImport(CMalloc)
import CMalloc
#endif

/// `transcode-bench churn`: one process runs the pipeline job after job, as a cluster
/// transcoder does when publishers come and go, and reports after each job what the process
/// holds: resident memory and glibc's own account of its heap (bytes in use, bytes free but
/// kept, bytes in mappings of their own). In-use bytes that climb job after job are a leak;
/// resident memory that climbs while in-use bytes stay flat is freed memory the allocator
/// keeps (its per-thread arenas), which `--trim` hands back after each job as the node does.
struct Churn: AsyncParsableCommand {
    @Option(help: "Source FLV (H.264 + AAC).") var input: String
    @Option(help: "Jobs to run, one after another.") var jobs = 30
    @Option(help: "libx264 threads per rung (0: x264 decides).") var encoderThreads = 0
    @Flag(help: "Return freed heap pages to the system after each job (malloc_trim), as the node does.") var trim = false

    func run() async throws {
        var logger = Logger(label: "transcode-bench.libav")
        logger.logLevel = .error
        LibAVLogging.bootstrap(logger)
        #if canImport(CMalloc)
        _ = mallopt(M_MMAP_THRESHOLD, 1 << 20)  // as the node sets it (LargeAllocations)
        #endif
        var configuration = TranscodePipeline.Configuration(ladder: .default)
        configuration.encoderThreads = encoderThreads
        print("| job | RSS MiB | heap in use MiB | heap free, kept MiB | own mappings MiB | arenas' size MiB |")
        print("| --- | --- | --- | --- | --- | --- |")
        var samples: [HeapSample] = []
        for job in 1...max(1, jobs) {
            let statistics = try await EstuaryRun.run(input: input, configuration: configuration)
            guard statistics.decodedPictures > 0 else { throw BenchFailure("job \(job) decoded nothing") }
            if trim { HeapSample.trim() }
            let sample = HeapSample.now()
            samples.append(sample)
            print("| \(job) | \(sample.row) |")
        }
        let third = max(1, samples.count / 3)
        func mean(_ slice: ArraySlice<HeapSample>, _ value: (HeapSample) -> Int) -> Double {
            Double(slice.map(value).reduce(0, +)) / Double(slice.count) / 1_048_576
        }
        let early = samples.prefix(third), late = samples.suffix(third)
        print("")
        print("Means, first third of the jobs against the last: RSS \(Compare.f(mean(early, \.residentBytes), 1)) → \(Compare.f(mean(late, \.residentBytes), 1)) MiB, heap in use \(Compare.f(mean(early, \.inUseBytes), 2)) → \(Compare.f(mean(late, \.inUseBytes), 2)) MiB (trim after each job: \(trim ? "yes" : "no")).")
    }
}

/// What the process holds, from the kernel (`VmRSS`) and from glibc (`mallinfo2`, summed over
/// every arena).
struct HeapSample {
    var residentBytes: Int
    var inUseBytes: Int
    var freeBytes: Int
    var mappedBytes: Int
    var arenaBytes: Int

    static func now() -> HeapSample {
        var sample = HeapSample(residentBytes: residentBytes(), inUseBytes: 0, freeBytes: 0, mappedBytes: 0, arenaBytes: 0)
        #if canImport(CMalloc)
        let info = mallinfo2()
        sample.inUseBytes = Int(info.uordblks)
        sample.freeBytes = Int(info.fordblks)
        sample.mappedBytes = Int(info.hblkhd)
        sample.arenaBytes = Int(info.arena)
        #endif
        return sample
    }

    static func trim() {
        #if canImport(CMalloc)
        _ = malloc_trim(0)
        #endif
    }

    static func residentBytes() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kib = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return 0 }
        return kib * 1024
    }

    var row: String {
        func mib(_ bytes: Int) -> String { Compare.f(Double(bytes) / 1_048_576, 1) }
        return "\(mib(residentBytes)) | \(mib(inUseBytes)) | \(mib(freeBytes)) | \(mib(mappedBytes)) | \(mib(arenaBytes))"
    }
}
