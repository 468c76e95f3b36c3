// libFuzzer target: a whole RTMP server connection, as a raw socket would reach it.
//
// The handler the listener puts on every accepted connection (RTMPServer.makeConnectionHandler)
// runs on an EmbeddedChannel. The target plays a client: it writes C0+C1 (fixed), reads
// S0+S1+S2, writes C2 = S1, and then writes the fuzzer's bytes, cut into pieces, as the chunk
// stream that follows the handshake. Between pieces the event loop runs, so publish and play
// decisions (an ImmediateSessionAdmission's, applied on the next tick as an async
// delegate's would be) land between reads, and messages that arrive before them are held.
//
// Input: 4 control bytes, then the client's chunk stream.
//
//   byte 0, bits 0-1  how C2 arrives: 0 alone, 1 glued to the first piece, 2 split across two
//                     reads, 3 in the same read as C0+C1 (C2 is then zeros; the server ignores it)
//           bit 2     the socket stops taking bytes from the second piece to the last
//           bit 3     small limits (chunk, pending, metadata, reassembly budget), so that every
//                     limit is reachable with a few kilobytes
//           bit 4     the server shuts down gracefully at the end (RTMPServerShutdown)
//           bits 5-7  virtual time advanced after the last piece, × 10 s (fires the timeouts)
//   bytes 1-3         three cut points, each a fraction n/256 of the chunk stream's length
//
// Nothing may trap, and after the connection is closed:
// - everything the server sent decodes as a chunk stream a client can read, every command and
//   data message decodes, and the output ends on a message boundary;
// - the output stays bounded: at most 2 MiB in all, and at most 32 × the input + 8 KiB of
//   replies (everything but audio, video and onMetaData, which a player asked for);
// - no stream still has the connection as its publisher or as a subscriber, and the delegate
//   was told exactly once of every publisher it accepted that it is gone;
// - the node-wide reassembly budget is back to zero.
import AMF0
import CLibFuzzer
import Glibc
import Logging
import Media
import NIOCore
import NIOEmbedded
import RTMP
import Session
import Synchronization

/// Deterministic randomness for S1, so a crash replays byte for byte.
struct FixedRandom: RandomNumberGenerator, Sendable {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return state
    }
}

enum Handshake {
    static let packetSize = 1536
    /// S0 + S1 + S2.
    static let replySize = 1 + 2 * packetSize
    /// C1 of a plain client: time and version zero (no digest), then a fixed pattern.
    static let c1: [UInt8] = (0..<packetSize).map { $0 < 8 ? 0 : UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
}

enum Bounds {
    /// Everything the server may send for one input, handshake excluded.
    static let maxOutboundBytes = 2 << 20
    /// Replies (control, commands, status, acknowledgements) per input byte, plus a constant for
    /// the fixed answers of `connect`. The worst case known is about 15: `play` of an existing
    /// stream then `closeStream`, repeated in type 3 chunks (37 bytes) after a `connect` with a
    /// 128-character app, answers Stream Begin, two onStatus naming the path and
    /// |RtmpSampleAccess (about 550 bytes). 32 leaves room for that without letting a reply
    /// storm (a reply per byte, a loop) through.
    static func maxReplyBytes(inputBytes: Int) -> Int { 32 * inputBytes + 8192 }
}

/// Streams the delegate knows in app `live` before any input: `fixture` has metadata,
/// configuration records and a short GOP (a play of it gets media), `ended` has ended.
enum Fixture {
    static let serializers: [any FrameSerializer] = [FLVTagSerializer(), RTMPChunkSerializer()]

    static var hubConfiguration: HubConfiguration {
        var configuration = HubConfiguration()
        configuration.wakeInterval = .zero  // wake-ups must not depend on the wall clock
        configuration.subscriberQueueBytes = 2048  // a replay can overflow a viewer's queue
        configuration.gopCacheMaxFrames = 16
        configuration.gopCacheMaxBytes = 8192
        return configuration
    }

    /// x264 constrained baseline 640x360 (Tests/MediaTests/Vectors: avcBaseline360TagBody).
    static let videoSequenceHeader: [UInt8] = [
        0x17, 0x00, 0x00, 0x00, 0x00, 0x01, 0x42, 0xc0, 0x1e, 0xff, 0xe1, 0x00, 0x19, 0x67, 0x42, 0xc0,
        0x1e, 0xd9, 0x00, 0xa0, 0x2f, 0xf9, 0x70, 0x11, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x03,
        0x00, 0x32, 0x0f, 0x16, 0x2e, 0x48, 0x01, 0x00, 0x05, 0x68, 0xcb, 0x83, 0xcb, 0x20,
    ]
    /// AAC-LC 48 kHz mono (aacLC48000MonoTagBody).
    static let audioSequenceHeader: [UInt8] = [0xaf, 0x00, 0x11, 0x88, 0x56, 0xe5, 0x00]
    static let keyframe: [UInt8] = [0x17, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x65, 0x88, 0x84, 0x00, 0x33]
    static let interframe: [UInt8] = [0x27, 0x01, 0x00, 0x00, 0x28, 0x00, 0x00, 0x00, 0x04, 0x41, 0x9a, 0x02, 0x04]
    static let audio: [UInt8] = [0xaf, 0x01, 0x21, 0x10, 0x04, 0x60, 0x8c, 0x1c]

    static func metadata() -> ByteBuffer {
        var body = ByteBuffer()
        DataMessage(name: DataMessage.onMetaData, values: [.ecmaArray([
            AMF0Property("width", .number(640)), AMF0Property("height", .number(360)),
            AMF0Property("videocodecid", .number(7)), AMF0Property("audiocodecid", .number(10)),
        ])]).encode(into: &body)
        return body
    }

    static func path(_ name: String) -> StreamPath {
        guard let path = try? StreamPath(app: "live", name: name) else { fatalError("fixture path \(name) is invalid") }
        return path
    }

    static func fixtureHub() -> StreamHub {
        let hub = StreamHub(path: path("fixture"), serializers: serializers, configuration: hubConfiguration)
        guard case .attached = hub.attachPublisher(id: 0, evict: {}) else { fatalError("fixture hub refused its publisher") }
        let frames: [(MediaKind, Int64, ByteBuffer)] = [
            (.script, 0, metadata()),
            (.audio, 0, ByteBuffer(bytes: audioSequenceHeader)),
            (.video, 0, ByteBuffer(bytes: videoSequenceHeader)),
            (.video, 0, ByteBuffer(bytes: keyframe)),
            (.audio, 21, ByteBuffer(bytes: audio)),
            (.video, 33, ByteBuffer(bytes: interframe)),
        ]
        for (kind, timestamp, payload) in frames {
            guard let frame = try? MediaFrame.classified(kind: kind, timestamp: timestamp, payload: payload) else {
                fatalError("fixture frame does not classify")
            }
            hub.publish(frame, publisher: 0)
        }
        hub.detachPublisher(id: 0)
        return hub
    }
}

/// The policy of the fuzzed connection: decisions answered at once (an async delegate's answer
/// would come from a Task on another thread, which an EmbeddedEventLoop cannot take). Names
/// starting with `deny` are refused; publishing creates the stream; playing finds it or not.
final class FuzzDelegate: ImmediateSessionAdmission, Sendable {
    private struct State {
        var hubs: [StreamPath: StreamHub]
        var nextPublisher: StreamHub.PublisherID = 1
        /// Every session handed out during the run, to check that the connection ended each.
        var publishers: [PublishSession] = []
        var viewers: [PlaySession] = []
    }

    private let state: Mutex<State>

    init() {
        let ended = StreamHub(path: Fixture.path("ended"), serializers: Fixture.serializers, configuration: Fixture.hubConfiguration)
        ended.end()
        state = Mutex(State(hubs: [Fixture.path("fixture"): Fixture.fixtureHub(), Fixture.path("ended"): ended]))
    }

    func publishImmediately(_ request: PublishRequest) -> PublishAnswer {
        if request.path.name.hasPrefix("deny") {
            return .refused(.denied("refused by the fuzz delegate"))
        }
        let (hub, id) = state.withLock { state -> (StreamHub, StreamHub.PublisherID) in
            let hub = state.hubs[request.path]
                ?? StreamHub(path: request.path, serializers: Fixture.serializers, configuration: Fixture.hubConfiguration)
            state.hubs[request.path] = hub
            let id = state.nextPublisher
            state.nextPublisher += 1
            return (hub, id)
        }
        switch hub.attachPublisher(id: id, evict: request.evict) {
        case .attached:
            let session = PublishSession(
                path: request.path, hub: hub, id: id, transport: request.transport, remoteAddress: request.remoteAddress,
                requestReconnect: request.requestReconnect, query: request.query, traffic: request.traffic, kick: request.kick, evict: request.evict
            )
            state.withLock { $0.publishers.append(session) }
            // A draining node's request to move, to a client that advertised it can
            // (`capsEx`): sent on the connection's next tick.
            request.requestReconnect?(request.path.name.hasPrefix("move") ? "rtmp://127.0.0.1:1936/live" : nil)
            return .accepted(session)
        default:
            return .refused(.badName("\(request.path) is taken"))
        }
    }

    func playImmediately(_ request: PlayRequest) -> PlayAnswer {
        let path = request.path.primary
        if path.stream.name.hasPrefix("deny") {
            return .refused(.denied("refused by the fuzz delegate"))
        }
        guard path.isSource, let hub = state.withLock({ $0.hubs[path.stream] }) else { return .refused(.notFound("no such stream")) }
        let session = PlaySession(
            id: request.sessionID, hub: hub, transport: request.transport, remoteAddress: request.remoteAddress,
            query: request.query, traffic: request.traffic, kick: request.kick
        )
        state.withLock { $0.viewers.append(session) }
        return .accepted(session)
    }

    /// After the connection closed, no stream may still hold it as publisher or subscriber (a
    /// stream whose publisher never detaches refuses every later publisher), and every session
    /// the connection was given has ended (the handle tells its end once, whoever ends it).
    func checkReleased() {
        let (publishers, viewers) = state.withLock { ($0.publishers, $0.viewers) }
        for session in publishers {
            precondition(session.hasEnded, "publisher \(session.id) of \(session.path) never ended")
        }
        for session in viewers {
            precondition(session.hasEnded, "a viewer of \(session.path) never ended")
        }
        for (path, hub) in state.withLock({ $0.hubs }) {
            precondition(!hub.hasPublisher, "\(path) still has a publisher after its connection closed")
            let subscribers = hub.statistics.subscribers
            precondition(subscribers == 0, "\(path) still has \(subscribers) subscriber(s) after the connection closed")
        }
    }

    func forgetStreams() {
        state.withLock { state in
            state.hubs.removeAll()
            state.publishers.removeAll()
            state.viewers.removeAll()
        }
    }
}

/// Builds every log message (a peer chooses much of what goes into them) and drops it.
struct DiscardingLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var length = event.message.description.utf8.count
        for (_, value) in event.metadata ?? [:] { length &+= value.description.utf8.count }
        for (_, value) in metadata { length &+= value.description.utf8.count }
        keep(length)
    }
}

@inline(never)
func keep(_ value: Int) { _ = value }

/// What a client sees of the server's output: the handshake reply, then a chunk stream.
struct ClientView {
    private(set) var handshake: [UInt8] = []
    private var stream = ByteBuffer()
    private var decoder = ChunkDecoder()
    private var consumedSinceMessage = 0
    /// Bytes after the handshake reply.
    private(set) var totalBytes = 0
    /// Bytes of replies: everything but audio, video and onMetaData.
    private(set) var replyBytes = 0

    var handshakeDone: Bool { handshake.count == Handshake.replySize }
    var s1: [UInt8] { Array(handshake[1..<(1 + Handshake.packetSize)]) }

    mutating func receive(_ buffer: ByteBuffer) {
        var buffer = buffer
        if !handshakeDone {
            let count = min(Handshake.replySize - handshake.count, buffer.readableBytes)
            handshake += buffer.readBytes(length: count) ?? []
            if handshakeDone {
                precondition(handshake[0] == ServerHandshake.version, "S0 is \(handshake[0])")
                precondition(Array(handshake[(1 + Handshake.packetSize)...]) == Handshake.c1, "S2 does not echo a plain C1")
            }
        }
        totalBytes += buffer.readableBytes
        stream.writeBuffer(&buffer)
        while true {
            let before = stream.readerIndex
            let message: RTMPMessage?
            do {
                message = try decoder.next(from: &stream)
            } catch {
                fatalError("the server sent a chunk stream a client cannot decode: \(error)")
            }
            consumedSinceMessage += stream.readerIndex - before
            guard let message else { break }
            classify(message, bytes: consumedSinceMessage)
            consumedSinceMessage = 0
        }
        stream.discardReadBytes()
    }

    private mutating func classify(_ message: RTMPMessage, bytes: Int) {
        switch MessageType(rawValue: message.typeID) {
        case .audio, .video:
            return
        case .dataAMF0:
            guard let data = try? DataMessage(from: message) else { fatalError("the server sent a data message that does not decode") }
            if data.name == DataMessage.onMetaData { return }
        case .commandAMF0:
            guard (try? CommandMessage(from: message)) != nil else { fatalError("the server sent a command that does not decode") }
        case .userControl:
            guard (try? UserControl(from: message.payload)) != nil else { fatalError("the server sent a user control message that does not decode") }
        case .setChunkSize, .abort, .acknowledgement, .windowAcknowledgementSize, .setPeerBandwidth:
            break
        default:
            fatalError("the server sent a message of type \(message.typeID)")
        }
        replyBytes += bytes
    }

    /// Writes are whole messages, so the output must end between two of them.
    func checkEndsOnMessageBoundary() {
        precondition(stream.readableBytes == 0 && consumedSinceMessage == 0, "the server's output ends inside a message")
    }
}

struct Control {
    enum C2Delivery { case alone, withFirstPiece, split, withC0C1 }

    var c2: C2Delivery
    var stallsWrites: Bool
    var smallLimits: Bool
    var shutsDown: Bool
    var advanceSeconds: Int64
    var cuts: [UInt8]

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        let flags = bytes[0]
        let deliveries: [C2Delivery] = [.alone, .withFirstPiece, .split, .withC0C1]
        c2 = deliveries[Int(flags & 0x03)]
        stallsWrites = flags & 0x04 != 0
        smallLimits = flags & 0x08 != 0
        shutsDown = flags & 0x10 != 0
        advanceSeconds = Int64(flags >> 5) * 10
        cuts = [bytes[1], bytes[2], bytes[3]]
    }

    /// The chunk stream in four pieces (some possibly empty).
    func pieces(of body: [UInt8]) -> [[UInt8]] {
        let offsets = cuts.map { body.count * Int($0) / 256 }.sorted()
        var pieces: [[UInt8]] = []
        var start = 0
        for offset in offsets {
            pieces.append(Array(body[start..<offset]))
            start = offset
        }
        pieces.append(Array(body[start...]))
        return pieces
    }

    func configuration(budget: ReassemblyBudget) -> RTMPServerConfiguration {
        var configuration = RTMPServerConfiguration()
        if smallLimits {
            configuration.chunkLimits = ChunkLimits(
                maxMessageSize: 8192, maxCommandMessageSize: 1024, maxDataMessageSize: 4096,
                maxChunkSize: 4096, maxChunkStreams: 8, maxBufferedBytes: 8192, nodeBudget: budget
            )
            configuration.maxPendingMessages = 8
            configuration.maxPendingBytes = 2048
            configuration.maxMetadataBytes = 512
            configuration.maxMetadataValues = 32
        } else {
            configuration.chunkLimits.nodeBudget = budget
        }
        return configuration
    }
}

func runConnection(_ control: Control, body: [UInt8]) {
    let budget = ReassemblyBudget(limit: control.smallLimits ? 6000 : 64 << 20)
    let delegate = FuzzDelegate()
    let handler = RTMPServer.makeConnectionHandler(
        configuration: control.configuration(budget: budget),
        admission: delegate,
        logger: Logger(label: "fuzz", factory: { _ in DiscardingLogHandler() }),
        random: FixedRandom()
    )
    let loop = EmbeddedEventLoop()
    let channel = EmbeddedChannel(loop: loop)
    guard let address = try? SocketAddress(ipAddress: "192.0.2.7", port: 50_000) else { fatalError("bad address") }
    channel.remoteAddress = address
    do {
        try channel.pipeline.syncOperations.addHandler(handler)
    } catch {
        fatalError("cannot add the connection handler: \(error)")
    }
    channel.connect(to: address, promise: nil)

    var client = ClientView()
    func drain() {
        do {
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) { client.receive(buffer) }
        } catch {
            fatalError("the server wrote something other than bytes: \(error)")
        }
    }
    func deliver(_ bytes: [UInt8]) {
        guard !bytes.isEmpty, channel.isActive else { return }
        _ = try? channel.writeInbound(ByteBuffer(bytes: bytes))
        loop.run()
        drain()
    }
    func setWritable(_ writable: Bool) {
        guard channel.isActive, channel.isWritable != writable else { return }
        channel.isWritable = writable
        channel.pipeline.syncOperations.fireChannelWritabilityChanged()
        loop.run()
        drain()
    }

    var pieces = control.pieces(of: body)
    let c0c1 = [ServerHandshake.version] + Handshake.c1
    if control.c2 == .withC0C1 {
        deliver(c0c1 + [UInt8](repeating: 0, count: Handshake.packetSize) + pieces.removeFirst())
        precondition(client.handshakeDone, "no S0+S1+S2 after C0+C1+C2")
    } else {
        deliver(c0c1)
        precondition(client.handshakeDone, "no S0+S1+S2 after C0+C1")
        let c2 = client.s1
        switch control.c2 {
        case .alone:
            deliver(c2)
        case .withFirstPiece:
            pieces[0] = c2 + pieces[0]
        case .split, .withC0C1:
            let half = c2.count / 2
            deliver(Array(c2[..<half]))
            pieces[0] = Array(c2[half...]) + pieces[0]
        }
    }
    for (index, piece) in pieces.enumerated() {
        if control.stallsWrites, index == 1 { setWritable(false) }
        if control.stallsWrites, index == pieces.count - 1 { setWritable(true) }
        deliver(piece)
    }
    if control.advanceSeconds > 0 {
        loop.advanceTime(by: .seconds(control.advanceSeconds))
        drain()
    }
    if control.shutsDown, channel.isActive {
        channel.pipeline.syncOperations.fireUserInboundEventTriggered(RTMPServerShutdown())
        loop.run()
        drain()
    }
    loop.run()
    drain()

    let leftovers: EmbeddedChannel.LeftOverState
    do {
        leftovers = try channel.finish(acceptAlreadyClosed: true)
    } catch {
        fatalError("closing the connection failed: \(error)")
    }
    drain()
    if case .leftOvers(let inbound, _, _) = leftovers {
        precondition(inbound.isEmpty, "the connection handler passed \(inbound.count) inbound item(s) on")
    }

    client.checkEndsOnMessageBoundary()
    precondition(client.totalBytes <= Bounds.maxOutboundBytes, "\(client.totalBytes) bytes out for \(body.count) bytes in")
    let maxReplies = Bounds.maxReplyBytes(inputBytes: body.count)
    precondition(client.replyBytes <= maxReplies, "\(client.replyBytes) bytes of replies for \(body.count) bytes in (bound \(maxReplies))")
    precondition(budget.inUse == 0, "\(budget.inUse) bytes of the node's reassembly budget still reserved after the connection closed")
    delegate.checkReleased()
    delegate.forgetStreams()
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzRTMPConnection(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size >= 4 else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    runConnection(Control(bytes), body: Array(bytes[4...]))
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzRTMPConnection(data, size) })
