#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A dedicated POSIX thread for CPU-bound libav work (decoding, scaling, x264 encoding).
///
/// Transcoding must not run on Swift's cooperative pool (as wide as the machine's cores,
/// and shared with every task of the process) nor on NIO event loops (which serve
/// sockets): one job would stall everything else. Each pipeline therefore owns one thread
/// for its whole life; its libav objects are created, used and freed on it.
struct WorkerThread: Sendable {
    #if canImport(Darwin)
    private typealias Handle = pthread_t?
    #else
    private typealias Handle = pthread_t
    #endif

    /// The closure a thread runs, handed to the C entry point as an opaque pointer.
    private final class Body {
        let name: String
        let run: @Sendable () -> Void

        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    enum SpawnError: Error, Equatable {
        /// `pthread_create` failed with this errno.
        case pthreadCreate(Int32)
    }

    /// Starts a detached thread running `body`. `name` (15 bytes at most) shows in debuggers
    /// on Darwin. The thread is detached: callers learn of
    /// its end through their own signalling (the pipeline resumes a continuation).
    static func start(name: String, _ body: @escaping @Sendable () -> Void) throws(SpawnError) {
        let context = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        // Uninitialised storage that pthread_attr_init fills: calling the C struct's Swift
        // initialiser would depend on which imported module Swift deems its owner.
        let result = withUnsafeTemporaryAllocation(of: pthread_attr_t.self, capacity: 1) { storage in
            guard let attributes = storage.baseAddress else { return EINVAL }
            pthread_attr_init(attributes)
            defer { pthread_attr_destroy(attributes) }
            pthread_attr_setdetachstate(attributes, Int32(PTHREAD_CREATE_DETACHED))
            var handle = Handle()
            return pthread_create(&handle, attributes, Self.entryPoint, context)
        }
        guard result == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw .pthreadCreate(result)
        }
    }

    /// The C entry point: takes back the retained `Body` and runs it.
    private static let entryPoint: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? = { argument in
        guard let argument else { return nil }
        let body = Unmanaged<Body>.fromOpaque(argument).takeRetainedValue()
        #if canImport(Darwin)
        // Glibc declares pthread_setname_np only under _GNU_SOURCE, which Swift's
        // Glibc module does not define, so Linux threads keep the process name.
        pthread_setname_np(String(body.name.utf8.prefix(15)) ?? "transcode")
        #endif
        body.run()
        return nil
    }
}
