import Testing

/// The integration tests start the real `estuary` binary (`.build/debug/estuary`, or `ESTUARY_NODE`)
/// and drive it with ffmpeg, ffprobe, rtmpdump, curl and raw TCP clients.
///
/// Everything runs one test at a time: each test starts its own node and its own ffmpeg/ffprobe
/// processes, and on a 2-core machine parallel suites would turn timing into flakiness.
@Suite("Integration", .serialized, .timeLimit(.minutes(2)))
enum IntegrationTests {}
