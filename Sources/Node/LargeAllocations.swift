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
}
