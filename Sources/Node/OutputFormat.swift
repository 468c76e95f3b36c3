import Media
import RTMP

/// The hubs' output formats, by index: every frame is serialised at most once into each,
/// and the same bytes go to every viewer of that format.
enum OutputFormat {
    static let flv = 0
    static let rtmp = 1
    static var serializers: [any FrameSerializer] { [FLVTagSerializer(), RTMPChunkSerializer()] }
}
