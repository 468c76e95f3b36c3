@testable import AMF0
import NIOCore
import Testing

@testable import RTMP

/// Feeds every seed of the project's corpus (`Tests/FuzzCorpus`, see its README.md) to the
/// matching decoder: each must decode or throw a typed error, never trap or hang; whatever
/// decodes must re-encode and decode to the same value.
struct FuzzSeedRegressionTests {
    struct SeedsMissing: Error, CustomStringConvertible {
        let path: String
        var description: String {
            "fuzz seed corpus not found at \(path); it lives in Tests/FuzzCorpus"
        }
    }

    /// The corpus folder, located by walking up from this file to the directory holding Package.swift.
    static func seedDirectory(_ folder: String) throws -> String {
        var directory = String(#filePath)
        while let slash = directory.lastIndex(of: "/"), !directory.isEmpty {
            directory = String(directory[..<slash])
            if FileSystem.exists(directory + "/Package.swift") {
                let path = directory + "/Tests/FuzzCorpus/" + folder
                guard FileSystem.isDirectory(path) else { throw SeedsMissing(path: path) }
                return path
            }
        }
        throw SeedsMissing(path: "<no Package.swift above \(#filePath)>")
    }

    static func seeds(_ folder: String) throws -> [(name: String, bytes: [UInt8])] {
        let directory = try self.seedDirectory(folder)
        let names = FileSystem.list(directory).filter { !$0.hasPrefix(".") }.sorted()
        return names.map { ($0, FileSystem.read(directory + "/" + $0)) }
    }

    @Test(arguments: ["gortmplib/amf0", "gortmplib/chunk", "gortmplib/rawmessage", "gortmplib/message", "chunkstream"])
    func corpusFolderExistsAndIsNotEmpty(_ folder: String) throws {
        let seeds = try Self.seeds(folder)
        #expect(!seeds.isEmpty, "no seeds in \(folder)")
    }

    @Test
    func amf0SeedsDecodeOrFailWithTypedError() throws {
        for seed in try Self.seeds("gortmplib/amf0") {
            var buffer = ByteBuffer(seed.bytes)
            let values: [AMF0Value]
            do {
                values = try AMF0Decoder().decodeAll(from: &buffer)
            } catch {
                continue  // AMF0Error by construction (typed throws)
            }
            var encoded = ByteBuffer()
            AMF0Encoder().encode(values, into: &encoded)
            let again = try AMF0Decoder().decodeAll(from: &encoded)
            #expect(again.count == values.count, "\(seed.name) re-encodes differently")
            #expect(Self.sameIgnoringNaN(again, values), "\(seed.name) round trip changed the values")
        }
    }

    @Test
    func chunkSeedsDecodeOrFailWithTypedError() throws {
        // Single chunks of the named format at chunk size 65536: start from a decoder that has
        // seen Set Chunk Size 65536.
        for seed in try Self.seeds("gortmplib/chunk") {
            var decoder = ChunkDecoder()
            var setSize = ChunkEncoder().encode(SetChunkSize(chunkSize: 65536).message(), allocator: ByteBufferAllocator())
            _ = try decoder.next(from: &setSize)
            _ = Self.drain(seed.bytes, decoder: &decoder, name: seed.name)
        }
    }

    @Test(arguments: ["gortmplib/rawmessage", "gortmplib/message", "chunkstream"])
    func chunkStreamSeedsDecodeOrFailWithTypedError(_ folder: String) throws {
        for seed in try Self.seeds(folder) {
            var decoder = ChunkDecoder()
            for message in Self.drain(seed.bytes, decoder: &decoder, name: seed.name) {
                try Self.checkReencodes(message, name: seed.name)
                Self.decodeTyped(message)
            }
        }
    }

    /// The project's own chunk stream seeds are peer habits with a known outcome: the `librtmp-`
    /// ones decode to the end (type-1-first chunk streams), the `refused-` ones are refused.
    @Test
    func chunkStreamSeedsHaveTheirKnownOutcome() throws {
        for seed in try Self.seeds("chunkstream") {
            var decoder = ChunkDecoder()
            var buffer = ByteBuffer(seed.bytes)
            var outcome: Result<Int, ChunkError> = .success(0)
            var count = 0
            do {
                while let _ = try decoder.next(from: &buffer) { count += 1 }
                outcome = .success(count)
            } catch {
                outcome = .failure(error)
            }
            if seed.name.hasPrefix("librtmp-") {
                #expect(outcome == .success(count) && count > 0 && buffer.readableBytes == 0, "\(seed.name): \(outcome)")
            } else if seed.name.hasPrefix("refused-") {
                if case .failure(.unknownChunkStream) = outcome {} else { Issue.record("\(seed.name) was not refused: \(outcome)") }
            }
        }
    }

    /// Decodes messages until the decoder needs more data or throws. Each call to `next` either
    /// consumes bytes or returns nil, so this terminates.
    static func drain(_ bytes: [UInt8], decoder: inout ChunkDecoder, name: String) -> [RTMPMessage] {
        var buffer = ByteBuffer(bytes)
        var messages: [RTMPMessage] = []
        var iterations = 0
        while iterations <= bytes.count + 1 {
            iterations += 1
            do {
                guard let message = try decoder.next(from: &buffer) else { break }
                messages.append(message)
            } catch {
                break  // ChunkError by construction (typed throws)
            }
        }
        #expect(iterations <= bytes.count + 1, "\(name): decoder did not make progress")
        return messages
    }

    static func checkReencodes(_ message: RTMPMessage, name: String) throws {
        guard message.chunkStreamID >= 2 else {
            Issue.record("\(name): decoded chunk stream id \(message.chunkStreamID)")
            return
        }
        var encoded = ChunkEncoder().encode(message, allocator: ByteBufferAllocator())
        var decoder = ChunkDecoder()
        let again = try decoder.next(from: &encoded)
        #expect(again == message, "\(name): chunk re-encoding changed the message")
    }

    /// The typed layer over each raw message; errors are typed (`MessageError`), successes re-encode.
    static func decodeTyped(_ message: RTMPMessage) {
        switch message.type {
        case .setChunkSize: _ = try? SetChunkSize(from: message.payload).message()
        case .abort: _ = try? Abort(from: message.payload).message()
        case .acknowledgement: _ = try? Acknowledgement(from: message.payload).message()
        case .windowAcknowledgementSize: _ = try? WindowAcknowledgementSize(from: message.payload).message()
        case .setPeerBandwidth: _ = try? SetPeerBandwidth(from: message.payload).message()
        case .userControl:
            if let event = try? UserControl(from: message.payload) {
                #expect((try? UserControl(from: event.message().payload)) == event)
            }
        case .commandAMF0, .commandAMF3:
            if let command = try? CommandMessage(from: message) {
                _ = try? RTMPCommand(command)
                #expect(throws: Never.self) { try CommandMessage(from: command.message()) }
            }
        case .dataAMF0, .dataAMF3:
            if let data = try? DataMessage(from: message) {
                _ = data.metadataBody()
                #expect(throws: Never.self) { try DataMessage(from: data.message()) }
            }
        default:
            break
        }
    }

    /// Equality that treats NaN as equal to NaN (AMF0 numbers can be NaN).
    static func sameIgnoringNaN(_ lhs: [AMF0Value], _ rhs: [AMF0Value]) -> Bool {
        var left = ByteBuffer()
        var right = ByteBuffer()
        AMF0Encoder().encode(lhs, into: &left)
        AMF0Encoder().encode(rhs, into: &right)
        return left == right
    }
}
