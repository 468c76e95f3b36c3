// libFuzzer target: the RTMP client (RTMPClientHandler) against a hostile server. An edge
// plays from upstreams and a forward publishes to targets it does not control: whatever
// such a server sends must not trap, hang or grow the client.
//
// The handler runs on an EmbeddedChannel, as RTMPClient.connect sets it up once the
// handshake is over. The fuzzer's bytes are the server's chunk stream after the handshake,
// cut into pieces at the control bytes' cut points.
//
// Input: 3 control bytes, then the server's chunk stream.
//
//   byte 0, bit 0  the client plays (0) or publishes (1)
//           bit 1  small chunk limits (so the reassembly limits are reachable)
//           bit 2  when publishing, the test writes a frame of each kind after every piece
//           bit 3  the client advertises Enhanced RTMP v2 reconnects (a forward does)
//   bytes 1-2      two cut points, each a fraction n/256 of the chunk stream's length
//
// Checks, after the channel is closed:
// - the events keep their contract: at most one of `started` and `refused`, never both;
//   frames only after `started` and only when playing; `ended` exactly once, and last;
// - everything the client sent decodes as a chunk stream, and stays bounded: at most
//   16 KiB + 4 × the input (acknowledgements and ping responses answer the input), plus the
//   frames the test wrote;
// - every frame reported has a header that parses (it was classified).
import CLibFuzzer
import Glibc
import Media
import NIOCore
import NIOEmbedded
import RTMP
import Synchronization

final class Recorder: Sendable {
    let events = Mutex<[RTMPClientEvent]>([])
    func record(_ event: RTMPClientEvent) { events.withLock { $0.append(event) } }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzRTMPClient(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size >= 3 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let control = bytes[0]
    let role: RTMPClientHandler.Role = control & 1 == 0 ? .play : .publish
    let stream = Array(bytes[3...])
    let cuts = [Int(bytes[1]), Int(bytes[2])].map { $0 * stream.count / 256 }.sorted()
    var limits = ChunkLimits()
    if control & 2 != 0 {
        limits = ChunkLimits(maxMessageSize: 4096, maxChunkSize: 4096, maxChunkStreams: 8)
    }
    let recorder = Recorder()
    let channel = EmbeddedChannel()
    let url = RTMPClientURL(host: "upstream", port: 1935, app: "live", streamName: "cam")
    do {
        try channel.pipeline.syncOperations.addHandler(RTMPClientHandler(url: url, role: role, limits: limits, acceptsReconnectRequests: control & 8 != 0) { recorder.record($0) })
    } catch {
        fatalError("cannot add the handler: \(error)")
    }
    // Active, as a connected socket is: an inactive EmbeddedChannel would take no input.
    _ = try? channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1935)).wait()
    channel.pipeline.fireUserInboundEventTriggered(RTMPHandshakeCompleted())
    var written = 0
    let frames = [
        MediaFrame(kind: .video, timestamp: 0, isKeyframe: true, payload: ByteBuffer(bytes: [0x17, 1, 0, 0, 0, 0, 0, 0, 1, 0x65])),
        MediaFrame(kind: .audio, timestamp: 0, payload: ByteBuffer(bytes: [0xAF, 1, 0x21])),
        MediaFrame(kind: .script, timestamp: 0, payload: ByteBuffer(bytes: [2, 0, 10] + Array("onMetaData".utf8) + [5])),
    ]
    var start = 0
    for end in cuts + [stream.count] where channel.isActive {
        if end > start {
            _ = try? channel.writeInbound(ByteBuffer(bytes: stream[start..<end]))
        }
        start = max(start, end)
        if role == .publish, control & 4 != 0, channel.isActive {
            for frame in frames {
                written += frame.payload.readableBytes + 32
                channel.write(frame, promise: nil)
            }
            channel.flush()
        }
        channel.embeddedEventLoop.run()
    }
    _ = try? channel.close().wait()
    channel.embeddedEventLoop.run()

    // What the client sent: a readable chunk stream, bounded.
    var output = ByteBuffer()
    while let piece = try? channel.readOutbound(as: ByteBuffer.self) {
        var piece = piece
        output.writeBuffer(&piece)
    }
    let bound = 16 * 1024 + 4 * size + written
    precondition(output.readableBytes <= bound, "\(size) bytes from the server made the client send \(output.readableBytes) (bound \(bound))")
    var decoder = ChunkDecoder(limits: ChunkLimits(maxMessageSize: 1 << 24, maxChunkSize: 1 << 24, maxChunkStreams: 64))
    do {
        while try decoder.next(from: &output) != nil {}
    } catch {
        fatalError("the client's output is not a chunk stream: \(error)")
    }

    // The events' contract.
    let events = recorder.events.withLock { $0 }
    var started = false
    var refused = false
    var ended = 0
    for (index, event) in events.enumerated() {
        precondition(ended == 0, "an event after `ended`: \(event)")
        switch event {
        case .started:
            precondition(!started && !refused, "`started` twice, or after `refused`")
            started = true
        case .refused:
            precondition(!started && !refused, "`refused` after `started`, or twice")
            refused = true
        case .frames(let frames):
            precondition(started && role == .play, "frames before `started`, or while publishing (event \(index))")
            precondition(!frames.isEmpty, "an empty batch of frames (event \(index))")
            for frame in frames where frame.kind != .script {
                precondition(frame.tagHeader != nil, "a reported frame without its parsed header")
            }
        case .writable:
            break
        case .reconnectRequested:
            precondition(started && control & 8 != 0, "a reconnect request reported before `started`, or to a client that did not advertise reconnects")
        case .ended:
            ended += 1
        }
    }
    precondition(ended == 1, "`ended` reported \(ended) times after the connection closed")
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzRTMPClient(data, size) })
