import Foundation
#if canImport(CMalloc)
import CMalloc
#endif

/// Large buffers go straight to the kernel and back.
///
/// glibc serves allocations above its mmap threshold with their own mappings, which `free`
/// returns to the kernel at once and `realloc` grows with `mremap` (no copy). But the threshold
/// moves: each freed mapping raises it to that size (up to 32 MiB), after which buffers of
/// megabytes come from the per-thread heaps, where a realloc copies and a freed block stays
/// resident, often in another thread's arena than the next one asked for. The buffers of that
/// size here are bounded by budgets (RTMP reassembly, GOP caches, HLS segments); fixing the
/// threshold at 1 MiB keeps what the process holds close to what those budgets count: under an
/// attack on a 48 MiB reassembly budget, peak memory grew 53 MiB with the moving threshold.
enum LargeAllocations {
    static let mmapThreshold: Int32 = 1 << 20

    static func returnToTheSystem() {
        #if canImport(CMalloc)
        _ = mallopt(M_MMAP_THRESHOLD, mmapThreshold)
        #endif
    }

    /// Hands the heap's free pages back to the kernel, on a thread of its own (it walks and
    /// locks every arena). Called when a transcode job ends: a job's decoder, scalers and
    /// x264 encoders allocate from the arenas of their own threads, and what they free stays
    /// resident there, scattered so that no arena's top can shrink. Job after job, that grew a
    /// transcoder's RSS from 70 to 153 MiB over 60 jobs while the heap in use stayed at
    /// 0.5 MiB between them; trimmed after each job, RSS stayed at 51-55 MiB
    /// (`transcode-bench churn`, docs/benchmarks.md).
    static func returnFreedPages() {
        #if canImport(CMalloc)
        Thread.detachNewThread {
            _ = malloc_trim(0)
        }
        #endif
    }
}
