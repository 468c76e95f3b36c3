// libFuzzer target: the media bus frame format, both ways. FuzzMediaBus checks that what a
// node reads from the bus never traps; this target checks that what it reads means what the
// header and the payload say, and that what a node sends comes back unchanged.
//
// The input is cut into messages by 2-byte length prefixes, as in FuzzMediaBus (the two share
// the seeds in Tests/FuzzCorpus/busframe), and used three ways:
//
// 1. Receiving: each message is a bus message.
//    - A header that parses re-encodes to the same 36 bytes and leaves the reader after them;
//      a header that does not parse consumes nothing.
//    - A frame the reassembler returns is exactly as long as its header announced, has the
//      header's kind and timestamp (single fragment), takes its flags from its payload, never
//      from the header, and a sequence header it returns carries a configuration record that
//      parses: the bus hands on nothing RTMP ingest would refuse.
//    - A message refused for its header (anything but a length mismatch) leaves the
//      reassembler's statistics unchanged; statistics never decrease, and `frames` counts the
//      frames returned.
// 2. Sending: each message becomes a frame: a message whose bus header parses gives its kind,
//    timestamp and fragment body; any other gives kind (first byte mod 3), timestamp (next 8
//    bytes) and body (the rest). The flags are read from the body, as ingest does. The frames
//    are encoded by a MediaBusFrameEncoder with a small message size (bodies over 256 bytes are
//    fragmented) and fed to a fresh reassembler:
//    - a valid frame comes back whole and unchanged, unless the gap policy drops it after a
//      sequence number the encoder skipped (bit 4 of the first byte, or a non-zero composition
//      time in a parsed header); each skip is exactly one gap, and configuration records,
//      script data and video keyframes always come back;
//    - an invalid frame (empty, a malformed tag header, a configuration record that does not
//      parse) never comes back and is counted as invalid;
//    - every frame sent is accounted for: returned, dropped or invalid.
// 3. The GOP reply: the valid frames in hub order (configuration first, then from the first
//    video keyframe on) are encoded by MediaBusGOP within a byte limit taken from the input
//    and decoded: the result is all the frames if they fit the limit, else only the
//    configuration if that fits, else nothing, and the reply never exceeds the limit.
import CLibFuzzer
import Cluster
import Glibc
import Media
import NIOCore

enum Limits {
    static let maxFrameBytes = 1 << 16
    static let maxMessages = 10_000
    static let maxFrames = 256
}

func messages(in input: ByteBuffer) -> [ByteBuffer] {
    var buffer = input
    var messages: [ByteBuffer] = []
    while messages.count < Limits.maxMessages,
          let length = buffer.readInteger(as: UInt16.self),
          let message = buffer.readSlice(length: min(Int(length), buffer.readableBytes)) {
        messages.append(message)
    }
    return messages
}

func same(_ left: MediaFrame, _ right: MediaFrame) -> Bool {
    left.kind == right.kind && left.timestamp == right.timestamp && left.isKeyframe == right.isKeyframe
        && left.isSequenceHeader == right.isSequenceHeader && left.payload == right.payload
}

func same(_ left: [MediaFrame], _ right: [MediaFrame]) -> Bool {
    left.count == right.count && zip(left, right).allSatisfy { same($0, $1) }
}

func isConfiguration(_ frame: MediaFrame) -> Bool {
    frame.isSequenceHeader || frame.kind == .script
}

func isSyncPoint(_ frame: MediaFrame) -> Bool {
    isConfiguration(frame) || (frame.kind == .video && frame.isKeyframe)
}

/// The frame ingest would make of this payload (flags from the tag header), or nil when ingest
/// would refuse it.
func validated(kind: MediaKind, timestamp: Int64, payload: ByteBuffer) -> MediaFrame? {
    guard let frame = try? MediaFrame.classified(kind: kind, timestamp: timestamp, payload: payload) else { return nil }
    if frame.isSequenceHeader {
        // Refused only when the record throws: a codec without a parser (nil) passes.
        do { _ = try frame.validatedConfigurationRecord() } catch { return nil }
    }
    return frame
}

extension MediaBusReassembler.Statistics {
    func noneBelow(_ earlier: Self) -> Bool {
        frames >= earlier.frames && gaps >= earlier.gaps && droppedFrames >= earlier.droppedFrames
            && incompleteFrames >= earlier.incompleteFrames && staleFrames >= earlier.staleFrames
            && invalidFrames >= earlier.invalidFrames
    }
}

// MARK: 1. Receiving

func checkReceiving(_ messages: [ByteBuffer], joinsAtSyncPoint: Bool) {
    var reassembler = MediaBusReassembler(maxFrameBytes: Limits.maxFrameBytes, joinsAtSyncPoint: joinsAtSyncPoint)
    var returned: UInt64 = 0
    for message in messages {
        var reader = message
        var header: MediaBusFrameHeader?
        do {
            let parsed = try MediaBusFrameHeader(from: &reader)
            precondition(reader.readerIndex == message.readerIndex + MediaBusFrameHeader.size, "a header did not end after \(MediaBusFrameHeader.size) bytes")
            var written = ByteBuffer()
            parsed.write(into: &written)
            precondition(written == message.getSlice(at: message.readerIndex, length: MediaBusFrameHeader.size), "a header did not re-encode to its own bytes")
            header = parsed
        } catch {
            precondition(reader.readerIndex == message.readerIndex, "a refused header consumed bytes")
        }

        let before = reassembler.statistics
        do throws(MediaBusFrameError) {
            if let frame = try reassembler.receive(message) {
                returned += 1
                guard let header else { fatalError("a frame came out of a message whose header does not parse") }
                precondition(frame.payload.readableBytes == Int(header.frameLength), "a frame of \(frame.payload.readableBytes) bytes where its header announced \(header.frameLength)")
                if header.fragmentCount == 1 {
                    precondition(frame.kind == header.kind && frame.timestamp == header.timestamp, "a frame does not carry its header's kind and timestamp")
                }
                guard let expected = validated(kind: frame.kind, timestamp: frame.timestamp, payload: frame.payload) else {
                    fatalError("the bus handed on a frame ingest would refuse")
                }
                precondition(same(frame, expected), "a frame's flags are not its payload's")
            }
        } catch {
            switch error {
            case .lengthMismatch:
                break  // may abandon a partial frame (counted as incomplete and a gap)
            default:
                precondition(reassembler.statistics == before, "a message refused for its header (\(error)) changed the reassembly statistics")
            }
        }
        precondition(reassembler.statistics.noneBelow(before), "reassembly statistics went down")
        precondition(reassembler.statistics.frames == returned, "statistics count \(reassembler.statistics.frames) frames, \(returned) were returned")
    }
}

// MARK: 2. Sending

struct SentFrame {
    /// What is handed to the encoder.
    var frame: MediaFrame
    /// What ingest makes of it; nil when ingest would refuse it.
    var valid: MediaFrame?
    /// Skip a sequence number before this frame.
    var skipsBefore: Bool
}

func frames(from messages: [ByteBuffer]) -> [SentFrame] {
    var frames: [SentFrame] = []
    for message in messages.prefix(Limits.maxFrames) {
        var buffer = message
        let kind: MediaKind
        let timestamp: Int64
        let skips: Bool
        if let header = try? MediaBusFrameHeader(from: &buffer) {
            kind = header.kind
            timestamp = header.timestamp
            skips = header.compositionTime != 0
        } else {
            let first = buffer.readInteger(as: UInt8.self) ?? 0
            let kinds: [MediaKind] = [.audio, .video, .script]
            kind = kinds[Int(first % 3)]
            timestamp = buffer.readInteger(as: Int64.self) ?? 0
            skips = first & 0x10 != 0
        }
        let valid = validated(kind: kind, timestamp: timestamp, payload: buffer)
        let frame = valid ?? MediaFrame(kind: kind, timestamp: timestamp, payload: buffer)
        frames.append(SentFrame(frame: frame, valid: valid, skipsBefore: skips))
    }
    return frames
}

func checkSending(_ sent: [SentFrame], epoch: UInt32, maxMessageBytes: Int) {
    var encoder = MediaBusFrameEncoder(epoch: epoch, maxMessageBytes: maxMessageBytes, maxFrameBytes: Limits.maxFrameBytes)
    var receiver = MediaBusReassembler(maxFrameBytes: Limits.maxFrameBytes, joinsAtSyncPoint: false)
    var expectedGaps: UInt64 = 0
    var expectedInvalid: UInt64 = 0
    var encodedAny = false
    for item in sent {
        if item.skipsBefore {
            encoder.skip()
            // A receiver that has seen nothing yet cannot tell a skip from joining late.
            if encodedAny { expectedGaps += 1 }
        }
        let frame = item.frame
        let encoded: [ByteBuffer]
        do {
            encoded = try encoder.encode(frame)
        } catch {
            fatalError("the encoder refused a \(frame.payload.readableBytes)-byte frame: \(error)")
        }
        encodedAny = true
        precondition(encoded.count == encoder.fragmentCount(forBodyLength: frame.payload.readableBytes), "fragment count differs from fragmentCount(forBodyLength:)")
        var received: MediaFrame?
        for (index, message) in encoded.enumerated() {
            precondition(message.readableBytes <= encoder.maxMessageBytes, "a \(message.readableBytes)-byte message over the \(encoder.maxMessageBytes)-byte limit")
            let result: MediaFrame?
            do {
                result = try receiver.receive(message)
            } catch {
                fatalError("the receiver refused fragment \(index) of \(encoded.count) the encoder made: \(error)")
            }
            if index < encoded.count - 1 {
                precondition(result == nil, "a frame came out before its last fragment")
            } else {
                received = result
            }
        }
        guard let valid = item.valid else {
            expectedInvalid += 1
            precondition(received == nil, "a frame ingest would refuse came through the bus")
            continue
        }
        if let received {
            precondition(same(received, valid), "a frame changed on its way over the bus")
        } else {
            precondition(!isSyncPoint(valid), "a configuration record, script data or keyframe was dropped")
        }
    }
    let statistics = receiver.statistics
    precondition(statistics.gaps == expectedGaps, "\(statistics.gaps) gaps for \(expectedGaps) skipped sequence numbers")
    precondition(statistics.invalidFrames == expectedInvalid, "\(statistics.invalidFrames) invalid frames counted, \(expectedInvalid) sent")
    precondition(statistics.incompleteFrames == 0 && statistics.staleFrames == 0, "an in-order, complete stream counted incomplete or stale frames")
    precondition(statistics.frames + statistics.droppedFrames + statistics.invalidFrames == UInt64(sent.count), "frames went missing without being counted")
}

// MARK: 3. GOP reply

func checkGOP(_ sent: [SentFrame], maxBytes: Int) {
    let valid = sent.compactMap(\.valid)
    let configuration = valid.filter(isConfiguration)
    // A hub's GOP starts at a video keyframe.
    let media = valid.filter { !isConfiguration($0) }
    let gop = Array(media.drop { !($0.kind == .video && $0.isKeyframe) })
    let all = configuration + gop
    // docs/cluster.md: UInt32 count | (UInt32 length | 36-byte header + body) × count
    func size(_ frames: [MediaFrame]) -> Int { 4 + frames.reduce(0) { $0 + 4 + MediaBusFrameHeader.size + $1.payload.readableBytes } }

    let reply = MediaBusGOP.encode(all, maxBytes: maxBytes)
    precondition(reply.readableBytes <= max(maxBytes, size([])), "a \(reply.readableBytes)-byte GOP reply over its \(maxBytes)-byte limit")
    let decoded: [MediaFrame]
    do {
        decoded = try MediaBusGOP.decode(reply, maxFrameBytes: Limits.maxFrameBytes)
    } catch {
        fatalError("a GOP reply did not decode: \(error)")
    }
    if size(all) <= maxBytes {
        precondition(same(decoded, all), "the GOP reply did not decode to the GOP")
    } else if size(configuration) <= maxBytes {
        precondition(same(decoded, configuration), "the reduced GOP reply did not decode to the configuration")
    } else {
        precondition(decoded.isEmpty, "an over-limit GOP reply carried frames")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzBusFrame(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let input = ByteBuffer(bytes: UnsafeBufferPointer(start: data, count: size))
    let list = messages(in: input)
    let flags = data[0]
    let last = data[size - 1]

    checkReceiving(list, joinsAtSyncPoint: flags & 1 == 0)

    let sent = frames(from: list)
    // Below MediaBusFrameHeader.size + 256 the encoder raises the size itself.
    checkSending(sent, epoch: UInt32(flags) << 24 | UInt32(last), maxMessageBytes: Int(last) * 8)
    checkGOP(sent, maxBytes: last & 0x80 != 0 ? Int.max : size * Int(last & 0x7F) / 32)
    return 0
}

var arguments = CommandLine.argc
var argumentVector: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&arguments, &argumentVector) { data, size in fuzzBusFrame(data, size) })
