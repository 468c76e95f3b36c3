import Hummingbird
import Media
import NIOCore
import Session

/// HLS over HTTP:
///
/// | path | what |
/// | --- | --- |
/// | `/{app}/{name}/index.m3u8` | classic (MPEG-TS) master playlist |
/// | `/{app}/{name}/llhls.m3u8` | LL-HLS (fMP4) master playlist |
/// | `/{app}/{name}/{rendition}/index.m3u8`, `seg{N}.ts` | classic media playlist and segments |
/// | `/{app}/{name}/{rendition}/llhls.m3u8`, `init{I}.mp4`, `seg{N}.m4s`, `part{N}.{P}.m4s` | LL-HLS media playlist, init sections, segments, parts |
///
/// Every name is parsed strictly (no file system is involved, so traversal has nothing to
/// reach); anything else is a 404, malformed query values a 400. The routes are registered
/// by `PlaybackRoutes`, which shares their path shapes with HTTP-FLV's.
///
/// With `sessions`, a request (a playlist, a segment, a part) goes through the admission
/// unless it names a live session of its stream (`HLSSessions`): a master's as a new player,
/// anything else as its client (address, rendition, query), whose one session stands for
/// its later requests. Every URI of the playlists a player is given names its session.
public struct HLSRoutes: Sendable {
    public let service: HLSService
    /// Called with the stream of every request before it is looked up: a relay uses it to
    /// open the stream's renditions from the bus on demand and to mark them as watched.
    public let onRequest: (@Sendable (StreamPath) async -> Void)?
    /// HLS viewers as sessions; nil serves every request without admission.
    public let sessions: HLSSessions?

    public init(service: HLSService, onRequest: (@Sendable (StreamPath) async -> Void)? = nil, sessions: HLSSessions? = nil) {
        self.service = service
        self.onRequest = onRequest
        self.sessions = sessions
    }

    /// The longest query carried from a player's request into its playlists' URIs.
    static let maxCarriedQueryBytes = 1024
    /// Query parameters that belong to one request, never carried into URIs.
    static let requestParameters: Set<Substring> = ["session", "_HLS_msn", "_HLS_part", "_HLS_skip"]

    /// The session of a request: its own (`session=`), or one opened now through the
    /// admission: for a master, a new player's; for anything else, its client's
    /// (`HLSSessions.clientKey`), so that a player given a media playlist's URL directly is
    /// admitted once, not per reload, and no segment is served to a request the admission
    /// would refuse. Returns the session and the query its URIs carry (nil without
    /// sessions), or the refusal to answer with.
    func session(
        for path: RequestedRendition, rawQuery: String, remoteAddress: String, asClient: Bool = false
    ) async -> Result<(id: String, uriQuery: String)?, SessionRefusal> {
        guard let sessions else { return .success(nil) }
        let (id, carried) = Self.split(rawQuery)
        if let id {
            switch sessions.lookup(id, stream: path.primary.stream, remoteAddress: remoteAddress) {
            case .live: return .success((id, Self.uriQuery(id: id, carried: carried)))
            case .kicked: return .failure(.denied("this HLS session was ended by an operator"))
            case .unknown: break
            }
        }
        let opened = asClient
            ? await sessions.session(
                ofClient: HLSSessions.clientKey(remoteAddress: remoteAddress, path: path, carried: carried), path,
                query: StreamQuery(carried), remoteAddress: remoteAddress
            )
            : await sessions.open(path, query: StreamQuery(carried), remoteAddress: remoteAddress)
        switch opened {
        case .success(let id): return .success((id, Self.uriQuery(id: id, carried: carried)))
        case .failure(let refusal): return .failure(refusal)
        }
    }

    /// A request's `session` value and the parameters to carry (a token), as received.
    static func split(_ rawQuery: String) -> (session: String?, carried: String) {
        var session: String?
        var carried: [Substring] = []
        for pair in rawQuery.split(separator: "&") {
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            if name == "session" {
                session = pair.split(separator: "=", maxSplits: 1).dropFirst().first.map(String.init)
            } else if !requestParameters.contains(name) {
                carried.append(pair)
            }
        }
        let joined = carried.joined(separator: "&")
        return (session, joined.utf8.count <= maxCarriedQueryBytes ? joined : "")
    }

    static func uriQuery(id: String, carried: String) -> String {
        carried.isEmpty ? "session=\(id)" : "session=\(id)&\(carried)"
    }

    /// Counts a segment's or part's bytes to its session.
    private func count(_ response: Response, session id: String?) -> Response {
        if let sessions, let id, let length = response.headers[.contentLength].flatMap(Int.init) {
            sessions.sent(length, to: id)
        }
        return response
    }

    func master(app: String, name: String, file: String, rawQuery: String = "", remoteAddress: String = "") async throws -> Response {
        let variant: HLSPlaylist.Variant
        switch file {
        case "index.m3u8": variant = .transportStream
        case "llhls.m3u8": variant = .lowLatency
        default: return Self.status(.notFound)
        }
        guard let path = try? StreamPath(app: app, name: name) else { return Self.status(.notFound) }
        await onRequest?(path)
        let renditions = await service.renditions(of: path)
        guard !renditions.isEmpty else { return Self.status(.notFound) }
        // Renditions just attached that have no complete segment yet (a relay or edge that
        // has just opened them for this very request): wait for them, together and up to
        // the blocking timeout, so that the first answer lists every one, each with a
        // segment to start from. One older than that without a segment is not waited for. A player reads every media playlist of a master once when
        // it opens it, and gives up on one without segments (ffmpeg: "Output file does not
        // contain any stream").
        await withTaskGroup(of: Void.self) { group in
            for rendition in renditions.values where rendition.isStarting {
                if await !rendition.ended, await !rendition.hasCompleteSegment {
                    group.addTask { _ = await rendition.waitForCompleteSegment() }
                }
            }
        }
        let current = await service.renditions(of: path)
        let (streams, audio) = await Self.variantStreams(current, file: file)
        guard !streams.isEmpty else {
            if file == "index.m3u8", await !Self.variantStreams(current, file: "llhls.m3u8").streams.isEmpty {
                // Every rendition is fMP4 only (AV1 video or Opus audio, and no ladder): say
                // where the stream plays instead of a bare 404.
                return Self.text(.notFound, "this stream's codecs (AV1 or Opus) are not carried in MPEG-TS: play llhls.m3u8 (fMP4)\n")
            }
            return Self.status(.notFound)
        }
        // An ended stream's playlists stay for players to finish: no admission, no session
        // (there is nothing live to admit to).
        var live = false
        for rendition in current.values where await !rendition.ended { live = true }
        guard live else {
            return Self.playlist(HLSPlaylist.master(variant: variant, streams: streams, audio: audio))
        }
        switch await session(for: RequestedRendition(.source(path)), rawQuery: rawQuery, remoteAddress: remoteAddress) {
        case .failure(let refusal):
            return HTTPFLVRoutes.refused(refusal)
        case .success(let session):
            return Self.playlist(HLSPlaylist.master(variant: variant, streams: streams, audio: audio), query: session?.uriQuery)
        }
    }

    /// The renditions a master playlist lists: those with a complete segment, so players
    /// never get an entry they cannot start; and while any is live, only live ones (an ended
    /// rendition stays in the service for a while, and its playlist ends).
    /// An audio-only rendition is alternate audio (`EXT-X-MEDIA`), not a variant.
    private static func variantStreams(
        _ renditions: [String: HLSRendition], file: String
    ) async -> (streams: [HLSPlaylist.VariantStream], audio: [HLSPlaylist.AlternateAudio]) {
        var live: [String: HLSRendition] = [:]
        for (name, rendition) in renditions where await !rendition.ended { live[name] = rendition }
        let listed = live.isEmpty ? renditions : live
        var streams: [HLSPlaylist.VariantStream] = []
        var audioTracks: [(name: String, stream: HLSPlaylist.VariantStream)] = []
        for (renditionName, rendition) in listed.sorted(by: { Self.order($0.key, $1.key) }) {
            guard await rendition.hasCompleteSegment else { continue }
            // A rendition MPEG-TS cannot carry (AV1) is in the LL-HLS master only.
            if file == "index.m3u8", await !rendition.description.hasTransportStream { continue }
            let description = await rendition.description
            let stream = HLSPlaylist.VariantStream(
                uri: "\(renditionName)/\(file)",
                description: description,
                peakBitrate: await rendition.peakBitrate,
                averageBitrate: await rendition.averageBitrate
            )
            if Self.isAlternateAudio(renditionName), !description.hasVideo {
                audioTracks.append((renditionName, stream))
            } else {
                streams.append(stream)
            }
        }
        // Alternate audio goes with video variants; without one (the stream's own rendition
        // has no segment yet), the audio tracks are not listed at all, rather than as variants.
        guard !streams.isEmpty else { return ([], []) }
        // An alternate in a codec some variant's audio is not in (Opus beside AAC) is left
        // out: its codec would join every variant's CODECS, and a player without it (hls.js on
        // a browser without Opus) would drop every variant for an optional track. It still
        // plays over RTMP, HTTP-FLV, SRT and its own playlist. Variants without audio take any:
        // the group is then the stream's only sound.
        let alternates = audioTracks.filter { track in
            streams.allSatisfy { variant in
                !variant.description.hasAudio || track.stream.description.codecs.allSatisfy(variant.description.codecs.contains)
            }
        }
        return (streams, alternates.map {
            HLSPlaylist.AlternateAudio(
                name: $0.name, uri: $0.stream.uri, codecs: $0.stream.description.codecs, channels: $0.stream.description.audioChannels,
                peakBitrate: $0.stream.peakBitrate, averageBitrate: $0.stream.averageBitrate
            )
        })
    }

    /// A multitrack publisher's audio track N besides the first (`audioN`).
    static func isAlternateAudio(_ rendition: String) -> Bool {
        let number = rendition.utf8.dropFirst(5)
        return rendition.hasPrefix("audio") && !number.isEmpty && number.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    func media(app: String, name: String, rendition renditionName: String, file: String, query: Parameters, rawQuery: String = "", remoteAddress: String = "") async throws -> Response {
        guard let path = try? StreamPath(app: app, name: name) else {
            return Self.status(.notFound)
        }
        await onRequest?(path)
        guard let rendition = await service.renditions(of: path)[renditionName],
              let request = HLSResource(file) else {
            return Self.status(.notFound)
        }
        if case .mediaPlaylist(let variant) = request, variant == .transportStream, await !rendition.description.hasTransportStream {
            return Self.status(.notFound)  // AV1: LL-HLS (fMP4) only
        }
        let requested: RenditionPath? = renditionName == "src" ? .source(path) : try? RenditionPath(stream: path, rendition: renditionName)
        guard let requested else { return Self.status(.notFound) }
        // A segment or init section that is not there is a 404 before any admission: names
        // that do not exist cost no session and no hook.
        var stored: Response?
        switch request {
        case .transportStreamSegment(let sequence):
            guard let data = await rendition.segment(sequence)?.transportStream else { return Self.status(.notFound) }
            stored = Self.media(data, contentType: "video/mp2t")
        case .initSection(let id):
            guard let data = await rendition.initSection(id) else { return Self.status(.notFound) }
            stored = Self.media(data, contentType: "video/mp4")
        case .fragmentedSegment(let sequence):
            guard let segment = await rendition.segment(sequence), segment.duration != nil else { return Self.status(.notFound) }
            stored = Self.media(parts: segment.parts.map(\.data))
        case .mediaPlaylist, .part:
            break
        }
        // An ended rendition's playlist and media stay for players to finish: no admission, no
        // session (there is nothing live to admit to), but a kicked session stays refused.
        var sessionID: String?
        var uriQuery: String?
        if await rendition.ended {
            if let sessions, let id = Self.split(rawQuery).session, sessions.lookup(id, remoteAddress: remoteAddress) == .kicked {
                return HTTPFLVRoutes.refused(.denied("this HLS session was ended by an operator"))
            }
        } else {
            switch await session(for: RequestedRendition(requested), rawQuery: rawQuery, remoteAddress: remoteAddress, asClient: true) {
            case .failure(let refusal):
                return HTTPFLVRoutes.refused(refusal)
            case .success(let session):
                (sessionID, uriQuery) = (session?.id, session?.uriQuery)
            }
        }
        if let stored { return count(stored, session: sessionID) }
        switch request {
        case .mediaPlaylist(let variant):
            return try await mediaPlaylist(rendition, variant: variant, path: path, query: query, uriQuery: uriQuery)
        case .transportStreamSegment, .initSection, .fragmentedSegment:
            return Self.status(.notFound)  // answered above
        case .part(let sequence, let index):
            // The preload hint names the next part before it exists: hold the request.
            if !(await rendition.has(sequence: sequence, part: index)) {
                guard await rendition.waitFor(sequence: sequence, part: index) else { return Self.status(.notFound) }
            }
            guard let segment = await rendition.segment(sequence), index < segment.parts.count else { return Self.status(.notFound) }
            return count(Self.media(parts: [segment.parts[index].data]), session: sessionID)
        }
    }

    private func mediaPlaylist(_ rendition: HLSRendition, variant: HLSPlaylist.Variant, path: StreamPath, query: Parameters, uriQuery: String?) async throws -> Response {
        let block = try Self.blockingRequest(query)
        if block == nil, rendition.isStarting, await !rendition.hasCompleteSegment {
            // A rendition just opened for this request: its first segment, within the
            // blocking timeout, rather than a playlist without segments that a player
            // reading it once (at start) gives up on.
            _ = await rendition.waitForCompleteSegment()
        }
        if variant == .lowLatency, let block {
            if let last = await rendition.lastPosition, block.sequence > last.sequence + 2 {
                // RFC 8216bis 6.2.5.2: a request too far ahead is a client error.
                return Self.status(.badRequest)
            }
            _ = await rendition.waitFor(sequence: block.sequence, part: block.part)
        }
        var reports: [HLSPlaylist.RenditionReport] = []
        if variant == .lowLatency {
            for (otherName, other) in await service.renditions(of: path) where other !== rendition {
                if let last = await other.lastPosition {
                    reports.append(.init(uri: "../\(otherName)/llhls.m3u8", lastSequence: last.sequence, lastPart: last.part))
                }
            }
        }
        let (segments, discontinuitySequence, ended) = await rendition.playlistState
        // Ended with nothing left (its window given to the node's HLS budget, or a stream
        // that ended before its first segment): gone, not a playlist whose media sequence
        // starts over.
        if ended, segments.isEmpty { return Self.status(.notFound) }
        let text = HLSPlaylist.media(
            variant: variant,
            segments: segments,
            discontinuitySequence: discontinuitySequence,
            ended: ended,
            configuration: rendition.configuration,
            reports: reports
        )
        return Self.playlist(text, query: uriQuery)
    }

    /// `_HLS_msn` / `_HLS_part` (blocking playlist reload), validated.
    static func blockingRequest(_ query: Parameters) throws -> (sequence: Int, part: Int?)? {
        try blockingRequest(msn: query.get("_HLS_msn"), part: query.get("_HLS_part"))
    }

    /// The values of `_HLS_msn` and `_HLS_part`: nil when both are absent, the sequence and
    /// the optional part when valid; throws a 400 `HTTPError` for a part without an msn or a
    /// value that is not a bounded decimal. Pure (FuzzHTTPPath checks it).
    public static func blockingRequest(msn: String?, part: String?) throws -> (sequence: Int, part: Int?)? {
        guard let msn else {
            if part != nil { throw HTTPError(.badRequest, message: "_HLS_part without _HLS_msn") }
            return nil
        }
        guard let sequence = boundedInteger(msn) else { throw HTTPError(.badRequest, message: "bad _HLS_msn") }
        guard let part else { return (sequence, nil) }
        guard let index = boundedInteger(part) else { throw HTTPError(.badRequest, message: "bad _HLS_part") }
        return (sequence, index)
    }

    /// A non-negative decimal of at most 9 digits (no overflow, no signs, no spaces).
    public static func boundedInteger(_ text: some StringProtocol) -> Int? {
        guard (1...9).contains(text.utf8.count), text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return Int(text)
    }

    /// `src` first, then rungs by height, highest first (`1080p`, `720p`, …).
    public static func order(_ left: String, _ right: String) -> Bool {
        func rank(_ name: String) -> Int {
            if name == "src" { return Int.max }
            return Int(name.dropLast()) ?? 0
        }
        return rank(left) > rank(right) || (rank(left) == rank(right) && left < right)
    }

    // MARK: Responses

    static func headers(contentType: String, cacheControl: String) -> HTTPFields {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = cacheControl
        headers[.accessControlAllowOrigin] = "*"
        return headers
    }

    /// A playlist whose every URI carries `query` (a session and its token), when given.
    static func playlist(_ text: String, query: String?) -> Response {
        playlist(query.map { HLSPlaylist.appendingQuery($0, to: text) } ?? text)
    }

    static func playlist(_ text: String) -> Response {
        // Playlists change every part: cache for no longer than half a part target.
        Response(status: .ok, headers: headers(contentType: "application/vnd.apple.mpegurl", cacheControl: "no-cache"), body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func media(_ data: ByteBuffer, contentType: String) -> Response {
        // Segments, parts and init sections never change once published.
        var headers = headers(contentType: contentType, cacheControl: "public, max-age=3600, immutable")
        headers[.contentLength] = String(data.readableBytes)
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: data))
    }

    static func media(parts: [ByteBuffer]) -> Response {
        var headers = headers(contentType: "video/mp4", cacheControl: "public, max-age=3600, immutable")
        headers[.contentLength] = String(parts.reduce(0) { $0 + $1.readableBytes })
        return Response(status: .ok, headers: headers, body: .init(contentsOf: parts))
    }

    static func text(_ status: HTTPResponse.Status, _ message: String) -> Response {
        var headers = HTTPFields()
        headers[.accessControlAllowOrigin] = "*"
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: message)))
    }

    static func status(_ status: HTTPResponse.Status) -> Response {
        var headers = HTTPFields()
        headers[.accessControlAllowOrigin] = "*"
        return Response(status: status, headers: headers)
    }
}

/// A file name under a rendition, parsed strictly.
public enum HLSResource: Equatable, Sendable {
    case mediaPlaylist(HLSPlaylist.Variant)
    case transportStreamSegment(Int)
    case initSection(Int)
    case fragmentedSegment(Int)
    case part(sequence: Int, index: Int)

    public init?(_ file: String) {
        switch file {
        case "index.m3u8": self = .mediaPlaylist(.transportStream); return
        case "llhls.m3u8": self = .mediaPlaylist(.lowLatency); return
        default: break
        }
        if let number = Self.number(in: file, prefix: "seg", suffix: ".ts") {
            self = .transportStreamSegment(number)
        } else if let number = Self.number(in: file, prefix: "seg", suffix: ".m4s") {
            self = .fragmentedSegment(number)
        } else if let number = Self.number(in: file, prefix: "init", suffix: ".mp4") {
            self = .initSection(number)
        } else if file.hasPrefix("part"), file.hasSuffix(".m4s") {
            let middle = file.dropFirst(4).dropLast(4).split(separator: ".", omittingEmptySubsequences: false)
            guard middle.count == 2, let sequence = HLSRoutes.boundedInteger(middle[0]), let index = HLSRoutes.boundedInteger(middle[1]) else { return nil }
            self = .part(sequence: sequence, index: index)
        } else {
            return nil
        }
    }

    private static func number(in file: String, prefix: String, suffix: String) -> Int? {
        guard file.hasPrefix(prefix), file.hasSuffix(suffix), file.count > prefix.count + suffix.count else { return nil }
        return HLSRoutes.boundedInteger(file.dropFirst(prefix.count).dropLast(suffix.count))
    }
}

extension HLSPlaylist.Variant: Equatable {}
