import Dispatch
import Foundation
import Media
import NIOConcurrencyHelpers
import NIOCore
import Testing

@testable import Edge

/// The frames an RTMP upstream sends between `NetStream.Play.Start` and the pull's start
/// reach the hub in the order they arrived, whenever the pull starts.
struct FrameHandoffTests {
    static func frame(_ sequence: Int64) -> MediaFrame {
        MediaFrame(kind: .video, timestamp: sequence, payload: ByteBuffer(bytes: [0x27, 1, 0, 0, 0]))
    }

    /// A producer thread (the event loop) sends 20 000 numbered frames while the consumer
    /// starts part-way, with a slow first delivery so frames pile up behind it. Every
    /// frame arrives, once, in order; run 20 times at different start points.
    @Test func framesArrivingWhileTheHeldOnesAreDeliveredWaitBehindThem() async {
        for round in 0..<20 {
            let handoff = FrameHandoff(maxHeldBytes: 1 << 30)
            let received = NIOLockedValueBox<[Int64]>([])
            let total: Int64 = 20_000
            let producer = DispatchSemaphore(value: 0)
            let thread = Thread {
                for sequence in 0..<total {
                    handoff.receive([Self.frame(sequence)])
                    if sequence % 1000 == 0 { usleep(200) }
                }
                producer.signal()
            }
            thread.start()
            usleep(UInt32(200 + round * 150))
            let firstDelivery = NIOLockedValueBox(true)
            handoff.start { frames in
                // The first delivery is slow: the producer keeps sending meanwhile.
                if firstDelivery.withLockedValue({ first in defer { first = false }; return first }) { usleep(2000) }
                received.withLockedValue { $0.append(contentsOf: frames.map(\.timestamp)) }
            }
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async {
                    producer.wait()
                    continuation.resume()
                }
            }
            let sequence = received.withLockedValue { $0 }
            #expect(sequence.count == Int(total), "round \(round): \(sequence.count) of \(total) frames")
            let outOfOrder = zip(sequence, sequence.dropFirst()).filter { $0.1 != $0.0 + 1 }
            #expect(outOfOrder.isEmpty, "round \(round): out of order at \(outOfOrder.prefix(3))")
        }
    }

    /// Held frames beyond the byte bound are dropped, not queued without end.
    @Test func heldFramesAreBoundedInBytes() {
        let handoff = FrameHandoff(maxHeldBytes: 50)
        for sequence in 0..<100 { handoff.receive([Self.frame(Int64(sequence))]) }
        let received = NIOLockedValueBox<[Int64]>([])
        handoff.start { frames in received.withLockedValue { $0.append(contentsOf: frames.map(\.timestamp)) } }
        #expect(received.withLockedValue { $0 } == Array(0..<10))
        handoff.receive([Self.frame(500)])
        #expect(received.withLockedValue { $0 }.last == 500)
    }
}
