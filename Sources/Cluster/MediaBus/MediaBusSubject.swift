import Media

/// The subject a rendition's media travels on: `media.<app>.<name>.<rendition>`.
///
/// Stream names may contain `.` (`StreamPath` allows `[A-Za-z0-9_.-]`), which would split a
/// NATS token, so each `.` is written as `%2E`; `%` never occurs in a `StreamPath`, so the
/// mapping is reversible and two streams never share a subject.
public struct MediaBusSubject: Sendable, Hashable, CustomStringConvertible {
    public let path: StreamPath
    /// `src` for the source, a ladder rung's name (`720p`) otherwise.
    public let rendition: String
    /// The full subject string.
    public let subject: String

    public init(path: StreamPath, rendition: String) throws(BusError) {
        let renditionToken = Self.token(rendition)
        guard StreamPath.isValidComponent(rendition) else {
            throw .invalidSubject("media.\(Self.token(path.app)).\(Self.token(path.name)).\(renditionToken)")
        }
        self.path = path
        self.rendition = rendition
        self.subject = "media.\(Self.token(path.app)).\(Self.token(path.name)).\(renditionToken)"
    }

    /// The subject of a hub's rendition: `src` for a source, the rung's name for a rung.
    public init(_ rendition: RenditionPath) throws(BusError) {
        try self.init(path: rendition.stream, rendition: rendition.renditionName)
    }

    /// Every rendition of one stream: `media.<app>.<name>.*`.
    public static func allRenditions(of path: StreamPath) -> String {
        "media.\(token(path.app)).\(token(path.name)).*"
    }

    public var description: String { subject }

    static func token(_ component: String) -> String {
        guard component.utf8.contains(UInt8(ascii: ".")) else { return component }
        var token = ""
        token.reserveCapacity(component.utf8.count + 8)
        for character in component {
            if character == "." {
                token += "%2E"
            } else {
                token.append(character)
            }
        }
        return token
    }
}
