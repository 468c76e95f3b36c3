import AMF0
import Foundation
import NIOCore
import RTMP

extension RTMPRawClient {
    /// handshake, connect, createStream, publish; throws unless the answer is NetStream.Publish.Start.
    /// Returns the message stream id to send media on.
    func startPublishing(app: String, name: String) async throws -> UInt32 {
        try await self.plainHandshake()
        try await self.setChunkSize(4096)
        try await self.connect(app: app)
        let streamID = try await self.createStream()
        let code = try await self.publish(name: name, streamID: streamID)
        guard code == "NetStream.Publish.Start" else {
            throw IntegrationFailure("publish \(app)/\(name) answered \(code), expected NetStream.Publish.Start")
        }
        return streamID
    }

    /// Sends every tag of an FLV file as RTMP messages at the file's pace (up to 300 ms ahead,
    /// like `ffmpeg -re`): script data as `@setDataFrame`, audio on chunk stream 4, video on 6.
    /// Returns the numbers of audio and video frames (not sequence headers) sent.
    @discardableResult
    func streamFLV(_ file: URL, streamID: UInt32) async throws -> (audio: Int, video: Int) {
        let flv = FLVStream.parse([UInt8](try Data(contentsOf: file)))
        guard flv.error == nil, !flv.tags.isEmpty else {
            throw IntegrationFailure("\(file.path) is not a usable FLV file: \(flv.error ?? "no tags")")
        }
        let start = ContinuousClock.now
        let base = Int(flv.tags.first?.timestamp ?? 0)
        for tag in flv.tags {
            let due = Duration.milliseconds(Int(tag.timestamp) - base - 300)
            let elapsed = ContinuousClock.now - start
            if due > elapsed {
                try await Task.sleep(for: due - elapsed)
            }
            var payload = ByteBuffer()
            let type: MessageType
            let chunkStreamID: UInt32
            switch tag.type {
            case FLVTag.audio:
                type = .audio
                chunkStreamID = 4
            case FLVTag.video:
                type = .video
                chunkStreamID = 6
            default:
                type = .dataAMF0
                chunkStreamID = 5
                AMF0Encoder().encode(.string("@setDataFrame"), into: &payload)
            }
            payload.writeBytes(tag.data)
            try await self.send(RTMPMessage(type: type, streamID: streamID, timestamp: tag.timestamp, chunkStreamID: chunkStreamID, payload: payload))
        }
        return (flv.audioFrames.count, flv.videoFrames.count)
    }
}
