/// One of a stream's renditions: the stream as published (the source), or a rung a
/// transcoder makes of it. It is what a hub carries and what a viewer plays.
///
/// Typed, so the source `abr/demo_480p` (a stream whose name happens to end in `_480p`)
/// and the 480p rung of `abr/demo` are different keys everywhere: in the registry, on the
/// bus (`MediaBusSubject`), in HLS and in the coordinator's viewer counts.
public struct RenditionPath: Hashable, Sendable, CustomStringConvertible {
    public let stream: StreamPath
    /// The rung's name; nil for the source.
    public let rendition: String?

    /// The stream as its publisher sends it.
    public static func source(_ stream: StreamPath) -> RenditionPath {
        RenditionPath(stream: stream, validRendition: nil)
    }

    /// Rung `rendition` of `stream`; the rung name follows the stream name rule and is not
    /// `src`, the source's name where renditions are listed side by side.
    public init(stream: StreamPath, rendition: String) throws(StreamPathError) {
        guard StreamPath.isValidComponent(rendition), rendition != "src" else {
            throw .invalidRendition(String(rendition.prefix(StreamPath.maxComponentLength)))
        }
        self.init(stream: stream, validRendition: rendition)
    }

    private init(stream: StreamPath, validRendition: String?) {
        self.stream = stream
        self.rendition = validRendition
    }

    public var isSource: Bool { rendition == nil }

    /// The rendition's name where names are listed side by side (HLS, bus subjects): `src`
    /// for the source.
    public var renditionName: String { rendition ?? "src" }

    /// `app/name` for a source, `app/name/rung` for a rung: the path a viewer uses.
    public var description: String {
        guard let rendition else { return stream.description }
        return "\(stream)/\(rendition)"
    }
}

/// What a viewer's URL asks for, before any lookup.
///
/// - `app/name` (`rtmp://host/app/name`, `/app/name.flv`) is the source of `app/name`.
/// - `app/name/rung` (`rtmp://host/app/name/rung`, which RTMP clients send as application
///   `app/name` and stream `rung`; `/app/name/rung.flv`) is a rung. Names never contain
///   `/`, so this form cannot be mistaken for a stream.
/// - The older `app/name_rung` form stays playable where it is unambiguous: it is first the
///   stream named `name_rung`, and only when no such stream is live the rung `rung` of
///   `app/name` (`fallback`).
public struct RequestedRendition: Hashable, Sendable, CustomStringConvertible {
    public let primary: RenditionPath
    /// Tried when `primary` is not live: the rung an old-style `name_rung` meant.
    public let fallback: RenditionPath?

    public init(_ path: RenditionPath, fallback: RenditionPath? = nil) {
        self.primary = path
        self.fallback = fallback
    }

    /// `app` is the application as the client sent it (possibly `app/name` for a rung),
    /// `name` the stream name without its query. Nil when they name nothing valid.
    public init?(app: String, name: String) {
        let appParts = app.split(separator: "/", omittingEmptySubsequences: false)
        switch appParts.count {
        case 1:
            guard let stream = try? StreamPath(app: app, name: name) else { return nil }
            self.init(.source(stream), fallback: Self.legacyRung(of: stream))
        case 2:
            guard let stream = try? StreamPath(app: String(appParts[0]), name: String(appParts[1])),
                  let rung = try? RenditionPath(stream: stream, rendition: name) else { return nil }
            self.init(rung)
        default:
            return nil
        }
    }

    /// The lookups to try, in order.
    public var candidates: [RenditionPath] {
        fallback.map { [primary, $0] } ?? [primary]
    }

    public var description: String { primary.description }

    /// `app/name_rung` read as rung `rung` of `app/name` (split at the last `_`).
    static func legacyRung(of stream: StreamPath) -> RenditionPath? {
        guard let underscore = stream.name.lastIndex(of: "_") else { return nil }
        let name = stream.name[..<underscore]
        let rung = stream.name[stream.name.index(after: underscore)...]
        guard let source = try? StreamPath(app: stream.app, name: String(name)) else { return nil }
        return try? RenditionPath(stream: source, rendition: String(rung))
    }
}
