import CSRT
import Foundation
import LibAV
import Media
import NIOCore

/// An SRT publisher for the ingest-latency benchmark: a libsrt caller (stream id
/// `publish:app/name`, MediaMTX's convention) sending the source as MPEG-TS, muxed frame by
/// frame with the project's `MemoryMuxer` and flushed after each frame, in 1316-byte
/// messages (7 TS packets), paced in real time by DTS as the RTMP `Publisher` is. Each video
/// frame is noted when its last message was handed to libsrt.
///
/// libsrt's calls block, so it runs on a thread of its own, never in a Task.
struct SRTPublisher: Sendable {
    let host: String
    let port: Int
    let streamID: String
    let latencyMilliseconds: Int32
    let source: FLVSource
    let durationMilliseconds: Int64

    func run(onStart: @escaping @Sendable (ContinuousClock.Instant) -> Void) async throws -> PublishResult {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PublishResult, any Error>) in
            let thread = Thread {
                do {
                    continuation.resume(returning: try publish(onStart: onStart))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.name = "srt-publisher"
            thread.start()
        }
    }

    private func publish(onStart: @Sendable (ContinuousClock.Instant) -> Void) throws -> PublishResult {
        srt_startup()
        let socket = srt_create_socket()
        defer { srt_close(socket) }
        _ = streamID.withCString { srt_setsockflag(socket, SRTO_STREAMID, $0, Int32(strlen($0))) }
        var latency = latencyMilliseconds
        _ = srt_setsockflag(socket, SRTO_LATENCY, &latency, Int32(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw BenchError.message("SRT: \(host) is not an IPv4 address") }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_connect(socket, $0, Int32(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected != -1 else {
            throw BenchError.message("SRT connect to \(host):\(port) (\(streamID)): \(String(cString: srt_getlasterror_str())), reject reason \(srt_getrejectreason(socket))")
        }

        // The tracks come from the source's sequence headers, as the node's own muxers do.
        let headers = source.tags.filter(\.isSequenceHeader)
        let video = try headers.first { $0.kind == .video }.map { try VideoTrack(sequenceHeader: Self.frame($0, at: 0)) }
        let audio = try headers.first { $0.kind == .audio }.map { try AudioTrack(sequenceHeader: Self.frame($0, at: 0)) }
        let muxer = try MemoryMuxer(container: .mpegTS, video: video, audio: audio)

        let clock = ContinuousClock()
        let start = clock.now
        onStart(start)
        var frames: [SentFrame] = []
        frames.reserveCapacity(Int(durationMilliseconds / 30) + 64)
        var tagsSent = 0
        var maxLateness: Duration = .zero
        for (tag, timestamp, _) in PublishTimeline(source: source, durationMilliseconds: durationMilliseconds)
        where !tag.isSequenceHeader && tag.kind != .script {
            let due = start + .milliseconds(timestamp)
            let wait = due - clock.now
            if wait > .zero { Thread.sleep(forTimeInterval: Double(wait.components.attoseconds) / 1e18 + Double(wait.components.seconds)) }
            let now = clock.now
            maxLateness = max(maxLateness, now - due)
            try muxer.write(Self.frame(tag, at: timestamp))
            try send(try muxer.takeOutput(resendHeaders: tag.isKeyframe), on: socket)
            if tag.kind == .video, tag.isCodedVideoFrame {
                frames.append(SentFrame(dts: timestamp, pts: timestamp + tag.compositionTime, isKeyframe: tag.isKeyframe, sentAt: clock.now))
            }
            tagsSent += 1
        }
        return PublishResult(startedAt: start, frames: frames, tagsSent: tagsSent, maxLatenessMilliseconds: maxLateness.milliseconds)
    }

    /// Sends `bytes` in messages of at most 1316 bytes (SRT's live-mode payload: 7 TS packets).
    private func send(_ bytes: ByteBuffer, on socket: SRTSOCKET) throws {
        try bytes.withUnsafeReadableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = min(1316, buffer.count - offset)
                let pointer = buffer.baseAddress!.advanced(by: offset).assumingMemoryBound(to: CChar.self)
                guard srt_sendmsg2(socket, pointer, Int32(count), nil) == Int32(count) else {
                    throw BenchError.message("SRT send: \(String(cString: srt_getlasterror_str()))")
                }
                offset += count
            }
        }
    }

    private static func frame(_ tag: SourceTag, at timestamp: Int64) throws -> MediaFrame {
        let kind: MediaKind = tag.kind == .video ? .video : .audio
        return try MediaFrame.classified(kind: kind, timestamp: timestamp, payload: tag.body)
    }
}
