import NIOCore

/// Reassembles RTMP messages from a chunk stream (RTMP specification, section 5.3).
///
/// A pure parser: feed it bytes with ``next(from:)``, in pieces of any size (one byte at a time
/// works); it consumes complete header pieces and payload bytes and keeps the rest of its state
/// internally. It applies Set Chunk Size (type 1) and Abort (type 2) itself when it completes
/// those messages, because they change how the following bytes parse, and still returns them.
///
/// Peer differences it absorbs:
/// - Extended timestamps on type 3 continuation chunks: the specification, Flash Media Server,
///   librtmp (and so OBS) and ffmpeg repeat the 4-byte field on every continuation chunk;
///   some older servers and SDKs do not. Like SRS, the decoder peeks 4 bytes and consumes them
///   only if they equal the extended timestamp of the message's first chunk.
/// - A type 3 chunk that starts a new message after a type 0 chunk reuses the type 0 timestamp
///   as its delta (specification 5.3.1.2.4; ffmpeg's writer depends on this).
/// - A type 0, 1 or 2 header on a chunk stream whose message is still incomplete discards the
///   incomplete message and starts the new one, as if an Abort had been received.
/// - Zero-length messages ("empty messages are sent by some servers", gortmplib) are returned
///   with an empty payload.
/// - A chunk stream whose first chunk has a type 1 header. The specification starts every chunk
///   stream with type 0, but librtmp compresses a `RTMP_PACKET_SIZE_MEDIUM` packet to type 1
///   whenever no earlier packet exists on that channel, and the mobile SDKs built on it
///   (LFLiveKit and its descendants) send every media packet that way. Type 1 carries all but
///   the message stream id, which is taken as 0 for commands and data and as
///   ``mediaStreamID`` for audio and video; the timestamp delta counts from 0, so it is the
///   absolute timestamp (librtmp computes it against 0 in this case). SRS accepts this too, and
///   nginx-rtmp starts every chunk stream from zeroed state. A fresh chunk stream that starts
///   with type 2 or 3 is still refused: it has no length, so nothing safe can be assumed.
public struct ChunkDecoder: Sendable {
    /// The chunk size every RTMP connection starts with (specification 5.4.1).
    public static let defaultChunkSize = 128

    /// The bounds this decoder enforces.
    public let limits: ChunkLimits

    /// Bytes of storage held for messages in reassembly, summed over all chunk streams: what
    /// has arrived (rounded up to the buffers' sizes), never what a header declared.
    public var bytesInReassembly: Int { self.bufferedBytes }

    /// Whether the node's budget shed this decoder's connection.
    public var isShed: Bool { self.account?.isShed ?? false }

    /// Messages begun and not yet complete, over all chunk streams.
    public private(set) var unfinishedMessages = 0

    /// Whether audio, video and aggregate messages may be as large as
    /// ``ChunkLimits/maxMessageSize``. A server clears it until the connection asks to publish:
    /// before that, every message is held to the command size and the connection's
    /// reassembly to ``ChunkLimits/maxBufferedBytesWithoutMedia``, so a connection that never
    /// publishes cannot pin media-sized buffers.
    public var acceptsMedia = true

    /// Called once if the node's budget sheds this decoder's connection (see
    /// ``ReassemblyBudget``); set it before the first bytes arrive. Close the connection.
    public var onShed: (@Sendable () -> Void)?

    /// The chunk size the peer currently sends with; changed by Set Chunk Size messages.
    public private(set) var chunkSize: Int = ChunkDecoder.defaultChunkSize

    /// The message stream id given to audio and video that start a chunk stream with a type 1
    /// header (which carries no stream id). The connection sets it to the stream it publishes
    /// on; 1 is what `createStream` answers first on every server, ours included.
    public var mediaStreamID: UInt32 = 1

    /// How many chunk streams started with a type 1 header instead of type 0 (librtmp's habit),
    /// so the connection can log it once.
    public private(set) var chunkStreamsStartedWithType1 = 0

    private enum State: Sendable, Equatable {
        case basicHeader
        case messageHeader(format: UInt8, chunkStreamID: UInt32)
        case extendedTimestamp(format: UInt8, stream: Int)
        case payload(stream: Int)
    }

    private enum Step {
        case needMoreData
        case proceed
        case message(RTMPMessage)
    }

    private var state: State = .basicHeader
    /// Per chunk stream state, in an array so it can be mutated in place (no copy-on-write of payloads).
    private var streams: [ChunkStreamState] = []
    private var streamIndex: [UInt32: Int] = [:]
    /// Bytes of storage held for messages in reassembly, summed over all chunk streams.
    private var bufferedBytes = 0
    /// This decoder's share of the node budget, made at its first reservation.
    private var account: ReassemblyBudget.Account?

    /// Creates a decoder with the default chunk size of 128.
    public init(limits: ChunkLimits = .init()) {
        self.limits = limits
    }

    /// Returns the next complete message, or nil when `buffer` holds no complete message yet.
    ///
    /// Everything read is consumed from `buffer`; call again (with more bytes appended) after nil.
    /// An error leaves the decoder in an undefined state: close the connection.
    public mutating func next(from buffer: inout ByteBuffer) throws(ChunkError) -> RTMPMessage? {
        while true {
            let step: Step
            switch self.state {
            case .basicHeader:
                step = self.parseBasicHeader(&buffer)
            case .messageHeader(let format, let chunkStreamID):
                step = try self.parseMessageHeader(&buffer, format: format, chunkStreamID: chunkStreamID)
            case .extendedTimestamp(let format, let stream):
                step = try self.parseExtendedTimestamp(&buffer, format: format, stream: stream)
            case .payload(let stream):
                step = try self.parsePayload(&buffer, stream: stream)
            }
            switch step {
            case .needMoreData: return nil
            case .proceed: continue
            case .message(let message): return message
            }
        }
    }

    // MARK: Header pieces

    private mutating func parseBasicHeader(_ buffer: inout ByteBuffer) -> Step {
        let start = buffer.readerIndex
        guard let first = buffer.getInteger(at: start, as: UInt8.self) else { return .needMoreData }
        let format = first >> 6
        let chunkStreamID: UInt32
        switch first & 0x3F {
        case 0:
            // Two-byte form: 64 + the second byte (ids 64...319).
            guard let second = buffer.getInteger(at: start + 1, as: UInt8.self) else { return .needMoreData }
            chunkStreamID = 64 + UInt32(second)
            buffer.moveReaderIndex(forwardBy: 2)
        case 1:
            // Three-byte form: 64 + second byte + third byte * 256 (ids 64...65599).
            guard
                let second = buffer.getInteger(at: start + 1, as: UInt8.self),
                let third = buffer.getInteger(at: start + 2, as: UInt8.self)
            else { return .needMoreData }
            chunkStreamID = 64 + UInt32(second) + UInt32(third) << 8
            buffer.moveReaderIndex(forwardBy: 3)
        case let id:
            chunkStreamID = UInt32(id)
            buffer.moveReaderIndex(forwardBy: 1)
        }
        self.state = .messageHeader(format: format, chunkStreamID: chunkStreamID)
        return .proceed
    }

    private mutating func parseMessageHeader(
        _ buffer: inout ByteBuffer,
        format: UInt8,
        chunkStreamID: UInt32
    ) throws(ChunkError) -> Step {
        let headerLength = [11, 7, 3, 0][Int(format & 0x03)]
        guard buffer.readableBytes >= headerLength else { return .needMoreData }

        let index: Int
        if let existing = self.streamIndex[chunkStreamID] {
            index = existing
        } else {
            guard format <= 1 else { throw .unknownChunkStream(chunkStreamID) }
            guard self.streams.count < self.limits.maxChunkStreams else {
                throw .tooManyChunkStreams(limit: self.limits.maxChunkStreams)
            }
            index = self.streams.count
            self.streams.append(ChunkStreamState(chunkStreamID: chunkStreamID))
            self.streamIndex[chunkStreamID] = index
            if format == 1 {
                // librtmp's first packet on a channel: every field but the stream id is here.
                self.streams[index].inferStreamID = true
                self.chunkStreamsStartedWithType1 += 1
            }
        }

        if format == 3 {
            if self.streams[index].inProgress {
                // Continuation of the current message.
                if self.streams[index].extendedTimestamp != nil {
                    self.state = .extendedTimestamp(format: 3, stream: index)
                    return .proceed
                }
                self.beginChunk(stream: index)
                return .proceed
            }
            // A new message with every header field inherited.
            if self.streams[index].extendedTimestamp != nil {
                self.state = .extendedTimestamp(format: 3, stream: index)
                return .proceed
            }
            self.streams[index].timestamp &+= self.streams[index].timestampDelta
            return try self.beginMessage(stream: index)
        }

        self.discardIncompleteMessage(stream: index)
        // The length check above guarantees these reads succeed; the guard only avoids traps.
        guard let timestampField = buffer.readUInt24() else { return .needMoreData }
        if format <= 1 {
            guard
                let length = buffer.readUInt24(),
                let typeID = buffer.readInteger(as: UInt8.self)
            else { return .needMoreData }
            let limit = self.acceptsMedia
                ? self.limits.maxSize(ofType: typeID)
                : min(self.limits.maxSize(ofType: typeID), self.limits.maxCommandMessageSize)
            guard Int(length) <= limit else {
                throw .messageTooLarge(Int(length), limit: limit)
            }
            self.streams[index].messageLength = Int(length)
            self.streams[index].typeID = typeID
            if format == 0 {
                guard let streamID = buffer.readInteger(endianness: .little, as: UInt32.self) else {
                    return .needMoreData
                }
                self.streams[index].messageStreamID = streamID
                self.streams[index].inferStreamID = false
            } else if self.streams[index].inferStreamID {
                self.streams[index].messageStreamID = self.inferredStreamID(typeID: typeID)
            }
        }
        if timestampField == 0xFFFFFF {
            self.state = .extendedTimestamp(format: format, stream: index)
            return .proceed
        }
        self.streams[index].extendedTimestamp = nil
        self.applyTimestamp(timestampField, format: format, stream: index)
        return try self.beginMessage(stream: index)
    }

    private mutating func parseExtendedTimestamp(
        _ buffer: inout ByteBuffer,
        format: UInt8,
        stream index: Int
    ) throws(ChunkError) -> Step {
        guard let value = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
        if format == 3 && self.streams[index].inProgress {
            // Continuation chunk: the field is optional in practice (see the type's documentation).
            if value == self.streams[index].extendedTimestamp {
                buffer.moveReaderIndex(forwardBy: 4)
            }
            self.beginChunk(stream: index)
            return .proceed
        }
        buffer.moveReaderIndex(forwardBy: 4)
        self.streams[index].extendedTimestamp = value
        self.applyTimestamp(value, format: format, stream: index)
        return try self.beginMessage(stream: index)
    }

    /// The stream id of a message on a chunk stream that never carried a type 0 header.
    private func inferredStreamID(typeID: UInt8) -> UInt32 {
        switch MessageType(rawValue: typeID) {
        case .audio, .video: self.mediaStreamID
        default: 0
        }
    }

    private mutating func applyTimestamp(_ value: UInt32, format: UInt8, stream index: Int) {
        if format == 0 {
            self.streams[index].timestamp = value
        } else {
            self.streams[index].timestamp &+= value
        }
        self.streams[index].timestampDelta = value
    }

    // MARK: Payload

    private mutating func beginMessage(stream index: Int) throws(ChunkError) -> Step {
        let length = self.streams[index].messageLength
        if length == 0 {
            return .message(try self.completeMessage(stream: index, payload: ByteBuffer()))
        }
        // Nothing is reserved for a declared length: bytes are charged as they arrive.
        self.streams[index].inProgress = true
        self.streams[index].received = 0
        self.streams[index].payload = nil
        self.streams[index].progressMark = -1
        self.streams[index].stalledChecks = 0
        self.unfinishedMessages += 1
        self.beginChunk(stream: index)
        return .proceed
    }

    private mutating func beginChunk(stream index: Int) {
        let remaining = self.streams[index].messageLength - self.streams[index].received
        self.streams[index].chunkRemaining = min(self.chunkSize, remaining)
        self.state = .payload(stream: index)
    }

    private mutating func parsePayload(_ buffer: inout ByteBuffer, stream index: Int) throws(ChunkError) -> Step {
        let count = min(self.streams[index].chunkRemaining, buffer.readableBytes)
        guard count > 0, var piece = buffer.readSlice(length: count) else { return .needMoreData }
        self.streams[index].received += count
        self.streams[index].chunkRemaining -= count

        let complete = self.streams[index].received == self.streams[index].messageLength
        if self.streams[index].payload == nil && complete {
            // Zero-copy when the whole message is one slice of the input: nothing is held.
            return .message(try self.completeMessage(stream: index, payload: piece))
        }
        try self.append(&piece, stream: index)

        if complete {
            let payload = self.streams[index].payload ?? ByteBuffer()
            self.streams[index].payload = nil
            return .message(try self.completeMessage(stream: index, payload: payload))
        }
        if self.streams[index].chunkRemaining == 0 {
            self.state = .basicHeader
            return .proceed
        }
        return .needMoreData
    }

    /// Copies a piece of a message's body into the message's own buffer, charging the buffer's
    /// growth to the connection's and the node's budgets before it happens. The buffer is the
    /// decoder's own rather than a slice of the input, so what it holds is what it is charged
    /// for (a slice would pin the whole receive buffer behind it).
    private mutating func append(_ piece: inout ByteBuffer, stream index: Int) throws(ChunkError) {
        let count = piece.readableBytes
        let length = self.streams[index].messageLength
        let held = self.streams[index].charged
        // Only the index is read here: a second reference to the buffer would make every
        // write below copy it (copy-on-write).
        let needed = (self.streams[index].payload?.writerIndex ?? 0) + count
        if needed > held {
            // ByteBuffer storage comes in powers of two; never more than the message needs.
            let target = min(Self.storageSize(for: needed), Self.storageSize(for: length))
            try self.charge(target - held)
            self.streams[index].charged = target
            if var buffer = self.streams[index].payload {
                self.streams[index].payload = nil  // now unique: it grows in place
                if held >= Self.largeStorage || target < Self.largeStorage {
                    buffer.reserveCapacity(target)
                    self.streams[index].payload = buffer
                } else {
                    // Crossing into large storage: a fresh allocation, which malloc maps on
                    // its own (realloc would grow the small block inside a heap, where it stays
                    // resident once freed); from here on realloc grows the mapping without a
                    // copy, and pages not yet written are not resident.
                    var large = ByteBufferAllocator().buffer(capacity: target)
                    large.writeBuffer(&buffer)
                    self.streams[index].payload = large
                }
            } else {
                self.streams[index].payload = ByteBufferAllocator().buffer(capacity: target)
            }
        }
        self.streams[index].payload?.writeBuffer(&piece)
    }

    /// From this size on, a message's storage is its own mapping (see `append`); the node
    /// fixes glibc's mmap threshold at the same size (`LargeAllocations`).
    static let largeStorage = 1 << 20

    /// The storage ByteBuffer allocates for `bytes`: the next power of two.
    private static func storageSize(for bytes: Int) -> Int {
        guard bytes > 1 else { return max(bytes, 0) }
        return 1 << (Int.bitWidth - (bytes - 1).leadingZeroBitCount)
    }

    /// Charges `bytes` of new storage to this connection's share and to the node's budget.
    private mutating func charge(_ bytes: Int) throws(ChunkError) {
        let connectionLimit = self.acceptsMedia
            ? self.limits.maxBufferedBytes
            : min(self.limits.maxBufferedBytes, self.limits.maxBufferedBytesWithoutMedia)
        guard self.bufferedBytes + bytes <= connectionLimit else {
            throw .tooManyBufferedBytes(self.bufferedBytes + bytes, limit: connectionLimit)
        }
        if let budget = self.limits.nodeBudget {
            let account: ReassemblyBudget.Account
            if let existing = self.account {
                account = existing
            } else {
                account = ReassemblyBudget.Account(onShed: self.onShed)
                self.account = account
            }
            switch budget.reserve(bytes, for: account) {
            case .reserved: break
            case .shed: throw .shedByNodeBudget(held: self.bufferedBytes)
            case .exhausted: throw .nodeReassemblyBudgetExhausted(limit: budget.limit)
            }
        }
        self.bufferedBytes += bytes
    }

    private mutating func completeMessage(stream index: Int, payload: ByteBuffer) throws(ChunkError) -> RTMPMessage {
        self.finish(stream: index)
        self.state = .basicHeader
        let stream = self.streams[index]
        let message = RTMPMessage(
            typeID: stream.typeID,
            streamID: stream.messageStreamID,
            timestamp: stream.timestamp,
            chunkStreamID: stream.chunkStreamID,
            payload: payload
        )
        try self.applyProtocolControl(message)
        return message
    }

    private mutating func discardIncompleteMessage(stream index: Int) {
        guard self.streams[index].inProgress else { return }
        self.finish(stream: index)
    }

    /// Ends the stream's current message (complete or discarded) and gives back its storage.
    private mutating func finish(stream index: Int) {
        if self.streams[index].inProgress {
            self.unfinishedMessages -= 1
        }
        let charged = self.streams[index].charged
        if charged > 0 {
            self.bufferedBytes -= charged
            if let account = self.account { self.limits.nodeBudget?.release(charged, for: account) }
        }
        self.streams[index].charged = 0
        self.streams[index].inProgress = false
        self.streams[index].received = 0
        self.streams[index].payload = nil
    }

    /// Gives back every byte reserved for messages still in reassembly; call when the
    /// connection closes, so the node-wide budget does not leak. The decoder is spent after it.
    public mutating func releaseReservations() {
        if let account = self.account { self.limits.nodeBudget?.close(account) }
        self.bufferedBytes = 0
        self.unfinishedMessages = 0
        for index in self.streams.indices {
            self.streams[index].inProgress = false
            self.streams[index].charged = 0
            self.streams[index].payload = nil
        }
    }

    /// Notes which unfinished messages received bytes since the previous call and returns the
    /// most calls in a row any of them went without (0 when each made progress or none is
    /// unfinished). Call it on a timer while ``unfinishedMessages`` is above zero: a message
    /// whose bytes stop coming for some number of periods is a peer holding the connection's
    /// buffers, not an encoder.
    public mutating func checkProgress() -> Int {
        guard self.unfinishedMessages > 0 else { return 0 }
        var worst = 0
        for index in self.streams.indices where self.streams[index].inProgress {
            let received = self.streams[index].received
            if received == self.streams[index].progressMark {
                self.streams[index].stalledChecks += 1
                worst = max(worst, self.streams[index].stalledChecks)
            } else {
                self.streams[index].progressMark = received
                self.streams[index].stalledChecks = 0
            }
        }
        return worst
    }

    // MARK: Protocol control that changes parsing

    private mutating func applyProtocolControl(_ message: RTMPMessage) throws(ChunkError) {
        switch message.typeID {
        case MessageType.setChunkSize.rawValue:
            guard let value = message.payload.getInteger(at: message.payload.readerIndex, as: UInt32.self) else {
                throw .malformedControlMessage(typeID: message.typeID, length: message.payload.readableBytes)
            }
            guard value != 0, value & 0x8000_0000 == 0 else { throw .invalidChunkSize(value) }
            guard Int(value) <= self.limits.maxChunkSize else {
                throw .chunkSizeTooLarge(value, limit: self.limits.maxChunkSize)
            }
            self.chunkSize = Int(value)
        case MessageType.abort.rawValue:
            guard let target = message.payload.getInteger(at: message.payload.readerIndex, as: UInt32.self) else {
                throw .malformedControlMessage(typeID: message.typeID, length: message.payload.readableBytes)
            }
            if let index = self.streamIndex[target] {
                self.discardIncompleteMessage(stream: index)
            }
        default:
            break
        }
    }
}
