import AMF0
import Logging
import Media
import Metrics
import NIOCore
import Session

/// A publishing connection: its request to the admission and the answer, its idle and
/// message-progress checks, and its media into the hub.
extension RTMPServerConnectionHandler {
    /// Asks the admission for a publisher's session (the machine validated the name). Media
    /// may follow at once: it is held (`pendingMessages`) until the answer.
    func requestPublish(_ path: StreamPath, query: String, streamID: UInt32, ticket: UInt64) {
        guard let context else { return }
        decoder.mediaStreamID = streamID
        decoder.acceptsMedia = true
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        var reconnect: ReconnectRequester?
        if acceptsReconnectRequest {
            reconnect = { @Sendable tcUrl in
                bound.eventLoop.execute { bound.value.sendReconnectRequest(tcUrl: tcUrl) }
            }
        }
        let traffic = SessionTraffic()
        self.traffic = traffic
        let request = PublishRequest(path: path, query: StreamQuery(query), remoteAddress: remoteAddress, transport: .rtmp, evict: {
            bound.eventLoop.execute { bound.value.takenOver() }
        }, requestReconnect: reconnect, traffic: traffic, kick: { reason in
            bound.eventLoop.execute { bound.value.kick(reason) }
        })
        admission.publish(request, on: context.eventLoop).assumeIsolated().whenSuccess { answer in
            self.resolvePublish(answer, path: path, streamID: streamID, ticket: ticket)
        }
    }

    func resolvePublish(_ answer: PublishAnswer, path: StreamPath, streamID: UInt32, ticket: UInt64) {
        switch answer {
        case .accepted(let session):
            guard machine.admitted(ticket: ticket, .publishing(PublishContext(session: session))) else {
                // The connection left or went away while we waited: give the stream back.
                session.end(.left)
                return
            }
            // A publisher's reads grow with its bitrate (`ReceiveBuffers`).
            try? context?.channel.syncOptions?.setOption(.recvAllocator, value: ReceiveBuffers.publisher)
            try? context?.channel.syncOptions?.setOption(.maxMessagesPerRead, value: ReceiveBuffers.publisherReadsPerWakeUp)
            // The admission may have renamed the stream (a hook): the session's path is the one published.
            streamName = "\(session.path)"
            log(.info, "publishing")
            send(UserControl.streamBegin(streamID: streamID).message())
            status(.status, .publishStart, "\(session.path) is now published", streamID: streamID)
            RTMPMetrics.publishes.increment()
            armIdleTimer()
            replayPending()
        case .refused(let refusal):
            guard machine.refused(ticket: ticket) else { return }
            log(.notice, "publish of \(path) refused: \(refusal.publishStatus.rawValue)")
            RTMPMetrics.refusedPublishes.increment()
            if let base = refusal.redirect, acceptsReconnectRequest {
                // An Enhanced RTMP v2 publisher goes where the admission sends it.
                let trimmed = base.hasSuffix("/") ? String(base.dropLast()) : base
                send(CommandMessage.reconnectRequest(tcUrl: "\(trimmed)/\(path.app)", description: "Publish to another server.").message(chunkStreamID: Self.connectionChunkStreamID))
            }
            status(.error, refusal.publishStatus, refusal.description, streamID: streamID)
            closeAfterFlush()
        }
        flushIfNeeded()
    }

    /// Checks every third of the timeout whether media came since the last check: one timer a
    /// publisher, and nothing on the media path but a flag.
    func armIdleTimer() {
        lastMediaSeen = .now()
        let timeout = configuration.publisherIdleTimeout
        let period = timeout / 3
        idleTimer = schedule(after: period) { handler in
            handler.checkIdle(timeout: timeout, period: period)
        }
    }

    func checkIdle(timeout: Duration, period: Duration) {
        guard machine.publishing != nil else { return }
        let now = NIODeadline.now()
        if mediaSinceIdleCheck {
            mediaSinceIdleCheck = false
            lastMediaSeen = now
            // Only while the publisher goes on: a silent connection is the idle timeout's.
            if let publish = machine.publishing { endSilentTracks(publish: publish) }
        } else if now - lastMediaSeen >= .init(timeout) {
            fail(.publisherIdle, status: (.connectIdleTimeOut, "no media for \(timeout)"))
            return
        }
        idleTimer = schedule(after: period) { $0.checkIdle(timeout: timeout, period: period) }
    }

    /// A multitrack publisher's track that sent no frame of its kind between two idle checks
    /// (a third of the idle timeout apart) while the connection went on is ended, so its
    /// players and masters are told and its hub takes its grace period, instead of a
    /// rendition that stalls for as long as the publisher stays. Its configuration is kept:
    /// the track opens again at its next keyframe (audio: frame).
    func endSilentTracks(publish: PublishContext) {
        for kind in [TrackKind.video, .audio] {
            for (trackID, state) in publish[keyPath: kind.tracks] {
                let key = PublishContext.TrackKey(kind: kind, id: trackID)
                // A video track not started yet drops its frames until its first keyframe.
                guard case .open(let session, let started) = state, started else {
                    publish.trackFramesAtCheck[key] = nil
                    continue
                }
                let statistics = session.hub.statistics
                let frames = kind == .video ? statistics.videoFramesIn : statistics.audioFramesIn
                guard publish.trackFramesAtCheck[key] == frames else {
                    publish.trackFramesAtCheck[key] = frames
                    continue
                }
                publish.trackFramesAtCheck[key] = nil
                let records = session.hub.configurationRecords
                RTMPMetrics.silentTracks.increment()
                log(.warning, "\(kind) track \(trackID) sent nothing since the last idle check while the publisher went on: ended until it sends again")
                endTrack(kind, trackID, session, publish: publish)
                if let header = kind == .video ? records.video : records.audio {
                    publish.keep(header, for: key)
                }
            }
        }
    }

    /// Checks every fifth of `messageStallTimeout` that each unfinished message received bytes;
    /// one that received none for five checks in a row closes the connection. Armed only
    /// while a message is unfinished after a read, so a viewer never has it.
    func armMessageProgressCheck() {
        let period = configuration.messageStallTimeout / Self.messageProgressChecks
        messageProgressTimer = schedule(after: period) { handler in
            handler.messageProgressTimer = nil
            guard handler.machine.isOpen else { return }
            if handler.decoder.checkProgress() >= Self.messageProgressChecks {
                handler.fail(.messageStalled)
            } else if handler.decoder.unfinishedMessages > 0 {
                handler.armMessageProgressCheck()
            }
        }
    }

    static let messageProgressChecks = 5

    func replayPending() {
        let held = pendingMessages
        pendingMessages = []
        pendingBytes = 0
        do {
            for message in held { try handle(message) }
        } catch {
            fail(error)
        }
        if let publish = machine.publishing { flushHub(publish.hub) }
    }

    /// Wakes the hub's subscribers; when the hub coalesces this burst into a later
    /// wake-up, makes sure that wake-up happens even if no further burst arrives.
    func flushHub(_ hub: StreamHub) {
        guard let deferral = hub.flush(), scheduledHubFlush == nil, let context else { return }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        scheduledHubFlush = context.eventLoop.scheduleTask(in: deferral) {
            bound.value.scheduledHubFlush = nil
            hub.flush(force: true)
        }
    }

    // MARK: Media

    func handleMedia(_ message: RTMPMessage) throws(RTMPConnectionError) {
        guard let publish = machine.publishing else {
            // Players may send nothing but control; media from a non-publisher is abuse.
            throw .mediaWithoutPublish
        }
        mediaSinceIdleCheck = true
        publish.latestTimestamp = Int64(message.timestamp)
        let frame: MediaFrame
        switch MessageType(rawValue: message.typeID) {
        case .dataAMF0, .dataAMF3:
            // Only metadata is kept; other data messages (cue points, text) are dropped.
            guard let metadata = metadataValue(message) else { return }
            publish.publisherMetadata = metadata
            guard let announced = announcedMetadata(publish) else { return }
            frame = announced
        case .audio, .video:
            guard message.payload.readableBytes > 0 else { return }  // some encoders send empty keep-alives
            let kind: MediaKind = message.typeID == MediaKind.audio.rawValue ? .audio : .video
            if kind == .video, MultitrackVideoTag.isMultitrack(message.payload) {
                return try handleMultitrack(message, publish: publish)
            }
            if kind == .audio, MultitrackAudioTag.isMultitrack(message.payload) {
                return try handleMultitrackAudio(message, publish: publish)
            }
            do {
                frame = try MediaFrame.classified(kind: kind, timestamp: Int64(message.timestamp), payload: message.payload)
                if frame.isSequenceHeader {
                    try validateSequenceHeader(frame, publish: publish)
                }
            } catch {
                throw .badMedia("\(error)")
            }
        default:
            return
        }
        try publishMain(frame, publish: publish)
    }

    /// A frame of the stream's own track: to its hub, and audio to every track's too.
    private func publishMain(_ frame: MediaFrame, publish: PublishContext) throws(RTMPConnectionError) {
        if !publish.hub.publish(frame, publisher: publish.id) {
            throw .evicted
        }
        if frame.kind == .audio, !publish.tracks.isEmpty {
            // Every rendition of the ladder has the publisher's one audio track, on the
            // stream's timeline as the tracks' video is (mapped once for them all).
            var followed = frame
            guard let timestamp = publish.hub.timelineTimestamp(ofTrackAt: frame.timestamp, publisher: publish.id) else { return }
            followed.timestamp = timestamp
            for track in publish.openVideoTracks { _ = track.hub.publish(followed, publisher: track.id, clock: .followed) }
        }
    }

    /// An Enhanced RTMP v2 multitrack audio tag: track 0 is the stream's audio; each other
    /// (a second language, a commentary) is an audio-only rendition of its own (`audioN`).
    func handleMultitrackAudio(_ message: RTMPMessage, publish: PublishContext) throws(RTMPConnectionError) {
        let tag: MultitrackAudioTag
        do {
            tag = try MultitrackAudioTag(message.payload, allocator: context?.channel.allocator ?? ByteBufferAllocator())
        } catch {
            throw .badMedia("multitrack audio: \(error)")
        }
        for track in tag.tracks {
            let frame: MediaFrame
            do {
                frame = try MediaFrame.classified(kind: .audio, timestamp: Int64(message.timestamp), payload: track.payload)
                if frame.isSequenceHeader {
                    if track.trackID == 0 { try validateSequenceHeader(frame, publish: publish) } else { _ = try frame.validatedConfigurationRecord() }
                }
            } catch {
                guard track.trackID == 0 else {
                    // An added track's bad frame costs that frame (and a bad configuration,
                    // the track), not the publisher's stream: said and counted once a track.
                    if publish.droppedAudioTracks.count < 256, publish.droppedAudioTracks.insert(track.trackID).inserted {
                        RTMPMetrics.droppedAudioTracks.increment()
                        log(.warning, "dropping a frame of audio track \(track.trackID): \(error)")
                    }
                    continue
                }
                throw .badMedia("multitrack audio: \(error)")
            }
            if track.trackID == 0 {
                try publishMain(frame, publish: publish)
            } else {
                publishAudioTrack(track.trackID, frame, publish: publish)
            }
        }
    }

    /// Audio renditions a multitrack publisher may add besides its main audio.
    static let maxAudioTracks = 7

    /// A frame of audio track `trackID` (not 0): to its rendition, opened on its first
    /// sequence header through the admission, as a video track is.
    func publishAudioTrack(_ trackID: UInt8, _ frame: MediaFrame, publish: PublishContext) {
        let ends = (try? frame.audioTagHeader())?.packetType == .sequenceEnd
        guard case .open(let session, _) = publish.audioTracks[trackID] else {
            return unopenedTrack(.audio, trackID, frame, ends: ends, publish: publish)
        }
        guard ends else {
            publishOnStreamTimeline(frame, to: session, publish: publish)
            return
        }
        endTrack(.audio, trackID, session, publish: publish)
    }

    // MARK: Multitrack

    /// Renditions a multitrack publisher may add besides its main track.
    static let maxTracks = 7

    /// An Enhanced RTMP v2 multitrack video tag: each track's frame, rewritten as a
    /// single-track tag, goes to its hub (track 0 to the stream's own).
    func handleMultitrack(_ message: RTMPMessage, publish: PublishContext) throws(RTMPConnectionError) {
        var frames: [(UInt8, MediaFrame)] = []
        do {
            let tag = try MultitrackVideoTag(message.payload, allocator: context?.channel.allocator ?? ByteBufferAllocator())
            for track in tag.tracks {
                let frame = try MediaFrame.classified(kind: .video, timestamp: Int64(message.timestamp), payload: track.payload)
                if frame.isSequenceHeader { _ = try frame.validatedConfigurationRecord() }
                frames.append((track.trackID, frame))
            }
        } catch {
            throw .badMedia("multitrack: \(error)")
        }
        for (trackID, frame) in frames {
            if trackID == 0 {
                if frame.isSequenceHeader {
                    do { try validateSequenceHeader(frame, publish: publish) } catch { throw .badMedia("\(error)") }
                }
                guard publish.hub.publish(frame, publisher: publish.id) else { throw .evicted }
            } else {
                publishTrack(trackID, frame, publish: publish)
            }
        }
    }

    func publishTrack(_ trackID: UInt8, _ frame: MediaFrame, publish: PublishContext) {
        let ends = (try? frame.videoTagHeader())?.packetType == .sequenceEnd
        guard case .open(let session, let started) = publish.tracks[trackID] else {
            return unopenedTrack(.video, trackID, frame, ends: ends, publish: publish)
        }
        if !started, !ends {
            guard frame.isKeyframe || frame.isSequenceHeader else { return }
            if frame.isKeyframe, !frame.isSequenceHeader { publish.tracks[trackID] = .open(session, started: true) }
        }
        publishOnStreamTimeline(frame, to: session, publish: publish)
        if ends { endTrack(.video, trackID, session, publish: publish) }
    }

    /// A track's frame to its rendition's hub, at the time the stream's hub gives its
    /// timestamp: a track's hub has no timeline of its own, so a track that began after the
    /// publisher came back within the grace period stays in step with the stream.
    private func publishOnStreamTimeline(_ frame: MediaFrame, to session: PublishSession, publish: PublishContext) {
        // Not the stream's publisher any more (taken over): its eviction is on its way.
        guard let timestamp = publish.hub.timelineTimestamp(ofTrackAt: frame.timestamp, publisher: publish.id) else { return }
        var frame = frame
        frame.timestamp = timestamp
        _ = session.hub.publish(frame, publisher: session.id, clock: .followed)
    }

    /// The encoder ended an open track: its players (and masters) are told now, not when
    /// the publisher leaves; a later sequence start opens it again.
    private func endTrack(_ kind: TrackKind, _ trackID: UInt8, _ session: PublishSession, publish: PublishContext) {
        log(.info, "\(kind) track \(trackID) ended")
        session.hub.flush(force: true)
        session.end(.left)
        publish[keyPath: kind.tracks][trackID] = nil
        publish.trackFramesAtCheck[.init(kind: kind, id: trackID)] = nil
        tracksChanged(publish)
    }

    /// A frame of a track not open: while its rendition is asked for, an end forgets the
    /// ask (its answer, when it comes, ends the session) and a newer sequence start is kept;
    /// otherwise a sequence start asks, and after a refusal a sequence start or a keyframe
    /// with the kept configuration asks again once `retryDelay` has passed. An end forgets
    /// the kept configuration but not the refusals: ending and restarting a track does not
    /// ask faster than the back-off.
    private func unopenedTrack(_ kind: TrackKind, _ trackID: UInt8, _ frame: MediaFrame, ends: Bool, publish: PublishContext) {
        let key = PublishContext.TrackKey(kind: kind, id: trackID)
        switch publish[keyPath: kind.tracks][trackID] {
        case .open:
            return
        case .opening(let header, let refusals, let start):
            if ends {
                publish[keyPath: kind.tracks][trackID] = refusals > 0 ? .refused(at: now, refusals: refusals) : nil
                publish.keptTrackConfigurations[key] = nil
            } else if frame.isSequenceHeader {
                publish[keyPath: kind.tracks][trackID] = .opening(sequenceHeader: frame, refusals: refusals)
            } else if start != nil || kind == .audio || frame.isKeyframe {
                // The newest frame a track can start with (a keyframe; audio: any frame), or
                // none after a frame that needs the ones before it: then its next keyframe.
                let startable = kind == .audio || frame.isKeyframe
                publish[keyPath: kind.tracks][trackID] = .opening(sequenceHeader: header, refusals: refusals, start: startable ? frame : nil)
            }
        case .refused(let at, let refusals):
            if ends {
                // The encoder ended the track: nothing to ask for again until it starts it anew.
                publish.keptTrackConfigurations[key] = nil
                return
            }
            let resumed = resumedConfiguration(kind, trackID, frame, publish: publish)
            // A new configuration during the back-off is the one to ask with when it ends.
            if frame.isSequenceHeader { publish.keep(frame, for: key) }
            askForTrack(kind, trackID, resumed ?? frame, publish: publish, refused: (at, refusals), start: resumed != nil ? frame : nil)
        case nil:
            if ends {
                publish.keptTrackConfigurations[.init(kind: kind, id: trackID)] = nil
            } else {
                let resumed = resumedConfiguration(kind, trackID, frame, publish: publish)
                askForTrack(kind, trackID, resumed ?? frame, publish: publish, start: resumed != nil ? frame : nil)
            }
        }
    }

    /// For a track ended for silence, or refused, that sends on (a keyframe; audio: any
    /// frame), its kept configuration at this frame's time, to ask for it with: encoders do
    /// not send a track's configuration twice. It is kept until a session opens (a refusal
    /// asks again with it); a new configuration replaces it.
    private func resumedConfiguration(_ kind: TrackKind, _ trackID: UInt8, _ frame: MediaFrame, publish: PublishContext) -> MediaFrame? {
        let key = PublishContext.TrackKey(kind: kind, id: trackID)
        if frame.isSequenceHeader {
            publish.keptTrackConfigurations[key] = nil
            return nil
        }
        guard var header = publish.keptTrackConfigurations[key], kind == .audio || frame.isKeyframe else { return nil }
        header.timestamp = frame.timestamp
        return header
    }

    /// A multitrack publisher's video tracks (`trackN`) or audio tracks (`audioN`): kept
    /// apart, for their ids are the same numbers.
    enum TrackKind {
        case video
        case audio

        var tracks: ReferenceWritableKeyPath<PublishContext, [UInt8: PublishContext.TrackState]> {
            self == .video ? \.tracks : \.audioTracks
        }
        var dropped: ReferenceWritableKeyPath<PublishContext, Set<UInt8>> {
            self == .video ? \.droppedTracks : \.droppedAudioTracks
        }
        var most: Int { self == .video ? RTMPServerConnectionHandler.maxTracks : RTMPServerConnectionHandler.maxAudioTracks }
        var rendition: String { self == .video ? "track" : "audio" }
    }

    /// A track not open yet (or `refused` before): its sequence start asks the admission for
    /// its rendition, within the most tracks a publisher may add; frames before it decode to
    /// nothing and are dropped. After a refusal it is asked again once `retryDelay` has
    /// passed: a track whose rendition was still held (its publisher's previous connection,
    /// within the grace period) or unavailable opens once it is free, and the admission is
    /// not asked at the encoder's frame rate.
    /// `start`: the frame that asked again, which the track starts with if it opens.
    private func askForTrack(
        _ kind: TrackKind, _ trackID: UInt8, _ frame: MediaFrame, publish: PublishContext, refused: (at: NIODeadline, refusals: Int)? = nil,
        start: MediaFrame? = nil
    ) {
        if let refused {
            guard frame.isSequenceHeader, now - refused.at >= Self.retryDelay(after: refused.refusals) else { return }
            publish[keyPath: kind.tracks][trackID] = nil
        }
        guard publish[keyPath: kind.tracks].count < kind.most else {
            if publish[keyPath: kind.dropped].count < 256, publish[keyPath: kind.dropped].insert(trackID).inserted {
                (kind == .video ? RTMPMetrics.droppedTracks : RTMPMetrics.droppedAudioTracks).increment()
                log(.warning, "dropping \(kind) track \(trackID): \(kind.most) \(kind) tracks besides the main one are the most taken")
            }
            return
        }
        guard frame.isSequenceHeader, let context else { return }
        publish[keyPath: kind.tracks][trackID] = .opening(sequenceHeader: frame, refusals: refused?.refusals ?? 0, start: start)
        admission.publishTrack(of: publish.session, rendition: "\(kind.rendition)\(trackID)", on: context.eventLoop)
            .assumeIsolated().whenSuccess { answer in
                self.resolveTrack(kind, trackID, answer, publish: publish)
            }
    }

    /// The loop's time (an `EmbeddedEventLoop`'s in tests, which the test advances).
    private var now: NIODeadline { context?.eventLoop.now ?? .now() }

    /// The wait before a refused track is asked for again: a second after its first refusal,
    /// doubling with each refusal after it, 30 s at most.
    static func retryDelay(after refusals: Int) -> TimeAmount {
        .seconds(Int64(min(30, 1 << min(max(refusals - 1, 0), 5))))
    }

    /// The admission's answer for a track: open, it gets its sequence start (and a video
    /// track the main audio's configuration, ahead of its first keyframe); refused, its
    /// sequence start is kept and it is asked for again on a later keyframe (audio: frame),
    /// after `retryDelay`.
    func resolveTrack(_ kind: TrackKind, _ trackID: UInt8, _ answer: PublishAnswer, publish: PublishContext) {
        guard let current = machine.publishing, current === publish, case .opening(let header, let refusals, let start) = publish[keyPath: kind.tracks][trackID] else {
            // The publisher left while we waited.
            if case .accepted(let session) = answer { session.end(.left) }
            return
        }
        switch answer {
        case .accepted(let session):
            log(.info, "publishing \(kind) track \(trackID) as \(session.hub.path)")
            publish.keptTrackConfigurations[.init(kind: kind, id: trackID)] = nil
            // A video track starts at its first keyframe; every audio frame is a start.
            publish[keyPath: kind.tracks][trackID] = .open(session, started: kind == .audio)
            // What a player of a video track needs before its first keyframe: the audio's
            // configuration (the publisher sent it once, to the main track) and the video's.
            if kind == .video, var audio = publish.hub.configurationRecords.audio {
                audio.timestamp = header.timestamp  // at the track's start, not the stream's first frame
                publishOnStreamTimeline(audio, to: session, publish: publish)
            }
            publishOnStreamTimeline(header, to: session, publish: publish)
            // Asked for again by a keyframe: the track starts with it, not a GOP later.
            if let start {
                publish[keyPath: kind.tracks][trackID] = .open(session, started: true)
                publishOnStreamTimeline(start, to: session, publish: publish)
            }
            session.hub.flush(force: true)
            tracksChanged(publish)
        case .refused(let refusal):
            let delay = Self.retryDelay(after: refusals + 1)
            log(.warning, "\(kind) track \(trackID) not published: \(refusal.description); asked for again in \(delay.nanoseconds / 1_000_000_000) s or later")
            publish.keep(header, for: .init(kind: kind, id: trackID))
            publish[keyPath: kind.tracks][trackID] = .refused(at: now, refusals: refusals + 1)
        }
    }

    /// The stream's metadata as players get it: the publisher's, with a multitrack stream's
    /// open tracks listed (`TrackIdInfoMaps`); nil when there is none to send, or it breaks
    /// the metadata limits once encoded (then dropped with a warning, as the publisher's).
    /// The maps are the node's, bounded on their own (`TrackIdInfoMaps.mostEncodedBytes`):
    /// they do not count against the publisher's limit.
    func announcedMetadata(_ publish: PublishContext) -> MediaFrame? {
        let (video, audio) = publish.openTrackIDs
        let listedBefore = !publish.listedTracks.video.isEmpty || !publish.listedTracks.audio.isEmpty
        publish.listedTracks = (video, audio)
        // The last track ended and the publisher sent no metadata of its own: an empty one
        // replaces the one that listed the tracks (players and pulling nodes keep the last).
        let publisherMetadata = publish.publisherMetadata ?? (listedBefore ? .ecmaArray([]) : nil)
        guard let metadata = TrackIdInfoMaps.metadata(publisherMetadata, videoTracks: video, audioTracks: audio),
              let body = DataMessage(name: DataMessage.onMetaData, values: [metadata]).metadataBody() else { return nil }
        let listsTracks = !video.isEmpty || !audio.isEmpty
        let limit = configuration.maxMetadataBytes + (listsTracks ? TrackIdInfoMaps.mostEncodedBytes : 0)
        if body.readableBytes > limit {
            dropMetadata(reason: "too_large", "\(body.readableBytes) bytes once re-encoded, over the \(limit)-byte limit\(listsTracks ? " (the track maps included)" : "")")
            return nil
        }
        return MediaFrame(kind: .script, timestamp: publish.latestTimestamp, payload: body)
    }

    /// The open tracks changed: the stream's metadata says so to its players (and to the
    /// nodes that pull it, which list the tracks in their masters).
    func tracksChanged(_ publish: PublishContext) {
        guard publish.openTrackIDs != publish.listedTracks, let frame = announcedMetadata(publish) else { return }
        _ = publish.hub.publish(frame, publisher: publish.id)
    }

    /// The publisher's `onMetaData` value, or nil when the message carries none or breaks the
    /// metadata limits (then it is dropped with a warning, once per connection, and counted;
    /// the stream goes on). Both the received size and the re-encoded size are checked
    /// (`announcedMetadata`): repairing invalid UTF-8 triples a string.
    func metadataValue(_ message: RTMPMessage) -> AMF0Value? {
        let limit = configuration.maxMetadataBytes
        if message.payload.readableBytes > limit {
            dropMetadata(reason: "too_large", "\(message.payload.readableBytes) bytes, over the \(limit)-byte limit")
            return nil
        }
        let data: DataMessage
        do {
            data = try DataMessage(from: message, decoder: AMF0Decoder(maxValues: configuration.maxMetadataValues))
        } catch .amf0(.tooManyValues) {
            dropMetadata(reason: "too_many_values", "over \(configuration.maxMetadataValues) values")
            return nil
        } catch {
            return nil
        }
        return data.metadata
    }

    func dropMetadata(reason: String, _ why: String) {
        RTMPMetrics.droppedMetadata(reason: reason)
        if !warnedMetadata {
            warnedMetadata = true
            log(.warning, "dropping metadata: \(why); the stream goes on")
        }
    }

    /// Parses configuration records before anyone receives them: a garbage record would
    /// otherwise break every player of the stream.
    func validateSequenceHeader(_ frame: MediaFrame, publish: PublishContext) throws {
        let summary = try frame.validatedConfigurationRecord()
        switch frame.kind {
        case .video:
            if !publish.announcedVideo, let summary { log(.info, "\(summary)") }
            publish.announcedVideo = true
        case .audio:
            if !publish.announcedAudio, let summary { log(.info, "\(summary)") }
            publish.announcedAudio = true
        case .script:
            break
        }
    }
}
