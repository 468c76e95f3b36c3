/// One rung of an adaptive-bitrate ladder as the coordinator assigns it: the rendition
/// name (`720p`) and its target size and video bit rate.
public struct RungSpec: Codable, Sendable, Hashable {
    public var name: String
    public var width: Int
    public var height: Int
    /// Video bits per second.
    public var bitRate: Int

    public init(name: String, width: Int, height: Int, bitRate: Int) {
        self.name = name
        self.width = width
        self.height = height
        self.bitRate = bitRate
    }
}
