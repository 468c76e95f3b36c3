/// What a token allows: publishing or playing.
public enum TokenAction: String, Sendable, Codable, CaseIterable {
    case publish
    case play
}
