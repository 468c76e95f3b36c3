import AMF0
import Logging
import Media
import Metrics
import NIOCore
import Session

/// A playing connection: its request to the admission and the answer, and its viewer's
/// media from the hub to the socket.
extension RTMPServerConnectionHandler {
    /// Asks the admission for a viewer's session (the machine validated the name).
    func requestPlay(_ path: RequestedRendition, query: String, streamID: UInt32, ticket: UInt64) {
        guard let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let traffic = SessionTraffic()
        let request = PlayRequest(path: path, query: StreamQuery(query), remoteAddress: remoteAddress, transport: .rtmp, traffic: traffic, kick: { reason in
            bound.eventLoop.execute { bound.value.kick(reason) }
        }, codecs: codecs)
        admission.play(request, on: context.eventLoop).assumeIsolated().whenSuccess { answer in
            self.resolvePlay(answer, path: path, streamID: streamID, traffic: traffic, ticket: ticket)
        }
    }

    func resolvePlay(_ answer: PlayAnswer, path requested: RequestedRendition, streamID: UInt32, traffic: SessionTraffic, ticket: UInt64) {
        guard machine.awaits(ticket: ticket), let context else {
            // The connection left or went away while we waited: the session never started.
            if case .accepted(let session) = answer { session.end(.left) }
            return
        }
        switch answer {
        case .accepted(let session):
            let hub = session.hub
            let path = hub.path
            let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
            let shared = streamID == RTMPChunkSerializer.streamID && encoder.chunkSize == RTMPChunkSerializer.chunkSize
            let subscriber = HubSubscriber(format: shared ? .rtmpChunks : nil, maxQueueBytes: hub.configuration.subscriberQueueBytes, eventLoop: context.eventLoop) { _ in
                bound.value.drainSubscriber()  // on this connection's loop
            }
            self.traffic = traffic
            _ = machine.admitted(ticket: ticket, .playing(PlayContext(hub: hub, subscriber: subscriber, path: path, sharedFormat: shared ? .rtmpChunks : nil, streamID: streamID, session: session)))
            streamName = "\(path)"
            log(.debug, "playing")
            send(UserControl.streamBegin(streamID: streamID).message())
            status(.status, .playReset, "Playing and resetting \(path)", streamID: streamID)
            status(.status, .playStart, "Started playing \(path)", streamID: streamID)
            send(DataMessage.sampleAccess().message(streamID: streamID))
            flushIfNeeded()
            RTMPMetrics.plays.increment()
            session.begin()
            if !hub.subscribe(subscriber) {
                status(.status, .playUnpublishNotify, "\(path) ended", streamID: streamID)
                closeAfterFlush(reason: .streamEnded)
            }
        case .refused(let refusal):
            _ = machine.refused(ticket: ticket)
            log(.debug, "play of \(requested) refused: \(refusal)")
            status(.error, refusal.playStatus, refusal.description, streamID: streamID)
            closeAfterFlush()
        }
        flushIfNeeded()
    }

    // MARK: Playback

    func drainSubscriber() {
        // Not `context.channel.isActive`: a closed channel's `channelInactive` leaves the role.
        guard let play = machine.playing, let context else { return }
        guard channelWritable else { return }  // resumed by channelWritabilityChanged
        writeReplies()  // Play.Start and the rest go before the media
        let traffic = play.session.traffic
        let outcome = backlog.pump(from: play.subscriber, eventLoop: context.eventLoop) { unit, promise in
            switch unit {
            case .bytes(let bytes):
                // A whole burst in the shared format, as the hub merged it.
                traffic?.sent(bytes.readableBytes)
                context.write(wrapOutboundOut(bytes), promise: promise)
            case .packet(let packet):
                if let format = play.sharedFormat, let bytes = packet.bytes(for: format) {
                    traffic?.sent(bytes.readableBytes)
                    context.write(wrapOutboundOut(bytes), promise: promise)
                } else {
                    let bytes = RTMPChunkSerializer.serialize(packet.frame, streamID: play.streamID, chunkSize: encoder.chunkSize, allocator: context.channel.allocator)
                    traffic?.sent(bytes.readableBytes)
                    context.write(wrapOutboundOut(bytes), promise: promise)
                }
            }
        }
        switch outcome {
        case .sliceInFlight(let written):
            context.flush()
            needsFlush = false
            // Still writable: the socket took the slice, or NIO holds it below the high-water
            // mark. Hand over the next either way, so a socket that stopped taking data fills
            // the channel and its write-stall timeout starts (no wake-up comes while this
            // backlog is unfinished). Unwritable: the next slice once this one is written.
            if channelWritable { return drainSubscriber() }
            written.assumeIsolated().whenComplete { _ in
                self.drainSubscriber()
            }
            return
        case .ended:
            send(UserControl.streamEOF(streamID: play.streamID).message())
            status(.status, .playUnpublishNotify, "\(play.path) ended", streamID: play.streamID)
            closeAfterFlush(reason: .streamEnded)  // writes the two replies above
        case .idle:
            break
        }
        context.flush()
        needsFlush = false
    }
}
