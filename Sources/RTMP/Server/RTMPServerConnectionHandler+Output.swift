import AMF0
import Logging
import Media
import Metrics
import NIOCore
import Session

/// What the connection writes (replies, acknowledgements), and how it ends: a failure, a
/// kick, a takeover, a shutdown; each ends the connection's session with its own reason.
extension RTMPServerConnectionHandler {
    // MARK: Output and teardown

    func status(_ level: StatusLevel, _ code: StatusCode, _ description: String, streamID: UInt32) {
        send(CommandMessage.onStatus(level: level, code: code, description: description).message(chunkStreamID: Self.streamChunkStreamID, streamID: streamID))
    }

    func send(_ message: RTMPMessage) {
        guard let context else { return }
        // Replies are bounded by construction (validated names, fixed texts); this guard keeps
        // a bug from reaching the encoder's precondition.
        guard message.payload.readableBytes <= 0xFFFFFF else {
            log(.error, "refusing to send a \(message.payload.readableBytes)-byte reply (type \(message.typeID))")
            fail(.replyTooLarge(message.payload.readableBytes))
            return
        }
        // A peer that does not read its replies (acknowledgements, ping responses) is not
        // allowed to grow our outbound buffer without bound.
        let unwritten = replies?.readableBytes ?? 0
        if !context.channel.isWritable || unwritten > configuration.maxOutboundBytes {
            let queued = unwritten + ((try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0)
            if queued > configuration.maxOutboundBytes {
                fail(.outboundBacklog(queued))
                return
            }
        }
        var buffer = replies ?? context.channel.allocator.buffer(capacity: max(512, message.payload.readableBytes + 32))
        replies = nil
        encoder.encode(message, into: &buffer)
        replies = buffer
        needsFlush = true
    }

    /// Hands the replies encoded so far to the channel (before any media written after them).
    func writeReplies() {
        guard let context, let buffer = replies else { return }
        replies = nil
        traffic?.sent(buffer.readableBytes)
        context.write(wrapOutboundOut(buffer), promise: nil)
    }

    func flushIfNeeded() {
        guard needsFlush, let context else { return }
        needsFlush = false
        writeReplies()
        context.flush()
    }

    func acknowledgeIfNeeded() {
        guard bytesReceived - bytesAcknowledged >= peerWindow else { return }
        bytesAcknowledged = bytesReceived
        send(Acknowledgement(sequenceNumber: UInt32(truncatingIfNeeded: bytesReceived)).message())
    }

    /// Gives up the stream or the subscription this connection holds, and ends its session
    /// for `reason` (unless a kick, a takeover or a drain said why first). Idempotent.
    func leaveRole(_ reason: SessionEndReason) {
        release(machine.leaveSession(), reason)
    }

    /// Ends the session the connection held (`held`, as the state machine gave it up) for
    /// `reason`, and drops what was kept for it.
    func release(_ held: Machine.Held?, _ reason: SessionEndReason) {
        switch held {
        case .publishing(let publish):
            // Frames from this connection's last read must reach viewers before the end.
            publish.hub.flush(force: true)
            publish.session.end(reason)
            publish.forEachOpenTrack { track in
                track.hub.flush(force: true)
                track.end(reason)
            }
            log(.info, "unpublished")
        case .playing(let play):
            play.hub.unsubscribe(play.subscriber)
            play.session.end(reason)
            let stats = play.subscriber.statistics
            if stats.skips > 0 {
                log(.info, "viewer left after \(stats.skips) queue overflows (\(stats.droppedFrames) frames skipped)")
            }
        case nil:
            break
        }
        traffic = nil
        backlog = ViewerBacklog()
        idleTimer?.cancel()
        idleTimer = nil
        pendingMessages = []
        pendingBytes = 0
    }

    /// Closes the connection for `error`: logged and counted once. With a `status`, the peer
    /// is told why first (an onStatus on the connection's stream 0) and the close waits for
    /// that answer to flush, within `closeFlushTimeout`.
    func fail(_ error: RTMPConnectionError, status: (code: StatusCode, description: String)? = nil) {
        guard let context else { return }
        if machine.isClosing { return }
        if error == .evicted {
            log(.notice, "closing: \(error)")
        } else {
            log(.warning, "closing connection: \(error)")
        }
        RTMPMetrics.closed(reason: error.reason)
        if let status {
            self.status(.error, status.code, status.description, streamID: 0)
            closeAfterFlush(reason: error.sessionEndReason)
            return
        }
        release(machine.close(), error.sessionEndReason)
        flushIfNeeded()
        context.close(promise: nil)
    }

    /// Writes the replies so far, then closes. With `linger`, the connection stays open that
    /// long after them (what the peer sends meanwhile is discarded): a publisher only reads
    /// between its writes, and would otherwise see a broken pipe before the reason.
    func closeAfterFlush(linger: Duration? = nil, reason: SessionEndReason = .left) {
        guard let context else { return }
        release(machine.close(), reason)
        needsFlush = false
        writeReplies()
        // A peer that reads nothing would keep the final answer, and the socket, for ever.
        closeTimer = schedule(after: linger ?? configuration.closeFlushTimeout) { handler in
            handler.context?.close(promise: nil)
        }
        let flushed = context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)))
        guard linger == nil else { return }
        flushed.assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }

    /// An operator's kick (`DELETE /api/v1/sessions/{id}`): the peer is told why, then the
    /// connection closes. A player gets its stream's end and `NetStream.Play.Stop`; a
    /// publisher an error-level `NetConnection.Connect.Closed`, which ffmpeg prints.
    func kick(_ reason: String) {
        guard context != nil, machine.isOpen else { return }
        log(.notice, "kicked: \(reason)")
        RTMPMetrics.closed(reason: "kicked")
        switch machine.stage {
        case .playing(let play):
            send(UserControl.streamEOF(streamID: play.streamID).message())
            status(.status, .playStop, "kicked by an operator: \(reason)", streamID: play.streamID)
        case .publishing:
            status(.error, .connectClosed, "kicked by an operator: \(reason)", streamID: 0)
            closeAfterFlush(linger: Self.kickLinger, reason: .kicked(reason))
            return
        default:
            break
        }
        closeAfterFlush(reason: .kicked(reason))
    }

    /// The hub let this publisher go: a newer publisher took the stream over
    /// (`StreamHub.attachPublisher`), or its stream key was revoked
    /// (`StreamHub.evictPublisher`). The encoder is told which, then the connection closes.
    func takenOver() {
        guard context != nil, let publish = machine.publishing else { return }
        let takenOver = publish.hub.hasPublisher
        log(.notice, "closing: \(takenOver ? "\(RTMPConnectionError.evicted)" : "evicted: its stream key was revoked")")
        RTMPMetrics.closed(reason: RTMPConnectionError.evicted.reason)
        let why = takenOver ? "a newer publisher took \(publish.path) over" : "the stream key of \(publish.path) was revoked"
        status(.error, .connectClosed, why, streamID: 0)
        closeAfterFlush(linger: Self.kickLinger, reason: takenOver ? .takenOver : .evicted)
    }

    /// How long a kicked publisher's connection stays open after the reason: long enough for
    /// a client that reads between writes (ffmpeg) to read it, short enough to be nothing.
    static let kickLinger: Duration = .milliseconds(750)

    /// Server shutdown: tell the peer why and close.
    func shutDown() {
        switch machine.stage {
        case .playing(let play):
            send(UserControl.streamEOF(streamID: play.streamID).message())
            status(.status, .playUnpublishNotify, "server shutting down", streamID: play.streamID)
        case .publishing:
            status(.status, .unpublishSuccess, "server shutting down", streamID: RTMPChunkSerializer.streamID)
        default:
            break
        }
        closeAfterFlush(reason: .shutdown)
    }
}
