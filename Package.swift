// swift-tools-version:6.1
// Estuary: a live-streaming server and cluster. See README.md and docs/architecture.md.

import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "estuary",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "estuary", targets: ["Node"]),
        .executable(name: "fanout-bench", targets: ["FanoutBench"]),
        .executable(name: "hls-latency-bench", targets: ["HLSLatencyBench"]),
        .executable(name: "transcode-bench", targets: ["TranscodeBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: ["Reloading"]),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-openapi-generator.git", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird.git", from: "2.1.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
    ],
    targets: [
        // The shared vocabulary: frames, codec configurations, FLV, timestamps, the stream hub.
        .target(
            name: "Media",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // Protocol-neutral publish and play sessions: requests, decisions, the one admission path.
        .target(
            name: "Session",
            dependencies: ["Media", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strict
        ),
        // AMF0, the value encoding of RTMP commands and of FLV/RTMP metadata: values, bounded decoder, encoder.
        .target(
            name: "AMF0",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strict
        ),
        // The RTMP protocol: handshake, chunk stream, messages, and the server/client sessions.
        .target(
            name: "RTMP",
            dependencies: [
                "AMF0", "Media", "Session",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        // FFmpeg's libraries as a Swift module (headers + shims for macros).
        .systemLibrary(
            name: "CFFmpeg",
            path: "Sources/CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev"])]
        ),
        // Formats libav's log lines (printf + va_list, which Swift cannot take) for LibAVLogging.
        .target(
            name: "CLibAVLog",
            linkerSettings: [.linkedLibrary("avutil")]
        ),
        // Swift owners of libav objects: muxers into memory, decoders, scaler, resampler, encoders.
        .target(
            name: "LibAV",
            dependencies: [
                "CFFmpeg", "CLibAVLog", "Media",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Publish admission and republish policy of the ingest role.
        .target(
            name: "Ingest",
            dependencies: [
                "Media", "Session",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // Playback: HTTP-FLV, HLS/LL-HLS and RTMP play, drained from stream hubs.
        .target(
            name: "Relay",
            dependencies: [
                "Media", "Session", "LibAV",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // Edge: streams pulled from upstream servers (HTTP-FLV, RTMP) on demand, with failover.
        .target(
            name: "Edge",
            dependencies: [
                "Media", "RTMP", "Session",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // Signed play and publish URLs: plain HMAC tokens and JWTs (HS256, RS256, ES256; keys from a JWKS file).
        .target(
            name: "Tokens",
            dependencies: [
                "Media", "Session",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // Webhooks: the operator's backend asked to admit publishers and viewers, and told of their ends.
        .target(
            name: "Hooks",
            dependencies: [
                "Media", "Session",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // libnats (cnats) as a Swift module: module map over one shim header.
        .systemLibrary(
            name: "CNats",
            path: "Sources/CNats",
            pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"])]
        ),
        // The bus between nodes: Bus, LocalBus, NATSBus over cnats, the media frame codec.
        .target(
            name: "Cluster",
            dependencies: [
                "CNats", "Media",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // The admin API's types and server stubs, generated at build time from `openapi.yaml`
        // (a link to docs/openapi.yaml), with the bearer-token guard in front of it.
        .target(
            name: "AdminAPI",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: [.unsafeFlags(["-suppress-warnings"])],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        // libsrt (Debian's libsrt-gnutls-dev) as a Swift module: module map over one shim header.
        .systemLibrary(
            name: "CSRT",
            path: "Sources/CSRT",
            pkgConfig: "srt",
            providers: [.apt(["libsrt-gnutls-dev"])]
        ),
        // SRT: the listener on libsrt's threads, stream ids (SRS and MediaMTX), MPEG-TS publishers.
        .target(
            name: "SRT",
            dependencies: [
                "CSRT", "LibAV", "Media", "Session",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // glibc's mallopt as a Swift module (the node fixes its mmap threshold at startup).
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),
        // The `node` executable: CLI, configuration, wiring of roles, service lifecycle.
        .executableTarget(
            name: "Node",
            dependencies: [
                "AdminAPI", "Media", "Session", "RTMP", "SRT", "Ingest", "Relay", "Edge", "Transcode", "LibAV", "Cluster", "Coordinator", "CMalloc", "Hooks", "Tokens",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Yams", package: "Yams"),
            ],
            swiftSettings: strict
        ),
        // Load generator for `make bench-fanout`: many lightweight RTMP / HTTP-FLV viewers in one process.
        .executableTarget(
            name: "FanoutBench",
            dependencies: [
                "AMF0", "CSRT", "Media", "RTMP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/FanoutBench",
            swiftSettings: strict
        ),
        // Load generator and probe for `make bench-hls`: publishes over RTMP, plays HLS and LL-HLS.
        .executableTarget(
            name: "HLSLatencyBench",
            dependencies: [
                "AMF0", "CSRT", "LibAV", "Media", "RTMP",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/HLSLatencyBench",
            swiftSettings: strict
        ),
        // `make bench-transcode`: the ABR pipeline against the ffmpeg CLI on the same ladder.
        .executableTarget(
            name: "TranscodeBench",
            dependencies: [
                "Media", "Transcode", "LibAV", "CMalloc",
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/TranscodeBench",
            swiftSettings: strict
        ),
        .testTarget(
            name: "EdgeTests",
            dependencies: [
                "Edge", "Media", "RTMP", .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // SRT stream ids (SRS and MediaMTX conventions) and the TS cut into SRT messages,
        // without sockets.
        .testTarget(
            name: "SRTTests",
            dependencies: [
                "SRT", "Media", "Session", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Metrics", package: "swift-metrics"), .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // Webhook bodies, configuration lookup and the end hooks' bounded queue.
        .testTarget(
            name: "HooksTests",
            dependencies: [
                "Hooks", "Media", "Session",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MediaTests",
            dependencies: ["Media", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strict
        ),
        // Fixtures shared by test targets: running ffmpeg/ffprobe, temporary directories.
        .target(
            name: "TestSupport",
            dependencies: [
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Tests/TestSupport",
            swiftSettings: strict
        ),
        .testTarget(
            name: "LibAVTests",
            dependencies: ["LibAV", "Media", "TestSupport", .product(name: "NIOCore", package: "swift-nio")],
            swiftSettings: strict
        ),
        // Publish admission and the stream-key cache, without sockets.
        .testTarget(
            name: "IngestTests",
            dependencies: ["Ingest", "Media", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "RelayTests",
            dependencies: [
                "Relay", "Media", "Cluster", "Session", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "RTMPTests",
            dependencies: [
                "AMF0", "RTMP", "Media", "Session",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOTestUtils", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // Bus implementations (LocalBus, NATSBus against a real nats-server) and the media codec.
        .testTarget(
            name: "ClusterTests",
            dependencies: [
                "Cluster", "Media", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // Drives the built `node` binary with real peers: ffmpeg, ffprobe, rtmpdump.
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "AMF0", "CSRT", "Media", "RTMP", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            exclude: ["Browser"],
            swiftSettings: strict
        ),
        // Adaptive-bitrate ladders: decode once, scale and encode per rung, publish renditions.
        .target(
            name: "Transcode",
            dependencies: [
                "AMF0", "LibAV", "Media",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "TranscodeTests",
            dependencies: [
                "Transcode", "LibAV", "Media", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The cluster's source of truth on SQLite (GRDB): registries, placement, stream keys, the actor, the admin API.
        .target(
            name: "Coordinator",
            dependencies: [
                "AdminAPI", "Cluster", "Media",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // The node's own parts without sockets: its admission path (publish and play over any
        // protocol), the relay's per-stream viewer reports, the transcode slots.
        .testTarget(
            name: "NodeTests",
            dependencies: [
                "Node", "Media", "Session", "Ingest", "Relay", "Cluster", "Transcode", "RTMP", "Tokens",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The coordinator on a temporary SQLite file, its admin API, its actor over a LocalBus.
        .testTarget(
            name: "CoordinatorTests",
            dependencies: [
                "AdminAPI", "Coordinator", "Cluster", "TestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // docker/: the compose file (Yams) against `node --check-config`, the Dockerfile's runtime libraries, scripts/cluster-local.sh.
        .testTarget(
            name: "DeploymentTests",
            dependencies: ["TestSupport", .product(name: "Yams", package: "Yams")],
            swiftSettings: strict
        ),
    ]
)

// libFuzzer targets, built only by scripts/fuzz.sh (ESTUARY_FUZZ=1, -sanitize=fuzzer).
// They are kept out of normal builds: they link only with libFuzzer's runtime.
if Context.environment["ESTUARY_FUZZ"] != nil {
    let nio: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
    // Each target with the modules it imports (CLibFuzzer is added to all).
    let fuzzTargets: [(name: String, dependencies: [Target.Dependency])] = [
        ("FuzzChunkDecoder", ["RTMP", nio]), ("FuzzAMF0", ["AMF0", nio]), ("FuzzCommand", ["AMF0", "RTMP", nio]),
        ("FuzzHandshake", ["RTMP", nio]), ("FuzzCodecConfig", ["Media", nio]), ("FuzzFLV", ["Media", nio]),
        ("FuzzMediaBus", ["Cluster", nio]),
        // A whole server connection on an EmbeddedChannel (docs/fuzzing.md).
        ("FuzzRTMPConnection", [
            "AMF0", "RTMP", "Media", "Session", nio,
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // HTTP playback paths as the router hands them over (URI parsing from HummingbirdCore).
        ("FuzzHTTPPath", ["Relay", "Media", "Cluster", .product(name: "HummingbirdCore", package: "hummingbird")]),
        ("FuzzBusFrame", ["Cluster", "Media", nio]),
        ("FuzzMetadata", ["AMF0", "RTMP", nio]),
        // The RTMP client (edge pulls, forwards) against a hostile server, on an EmbeddedChannel.
        ("FuzzRTMPClient", ["RTMP", "Media", nio, .product(name: "NIOEmbedded", package: "swift-nio")]),
        // Play and publish tokens from a hostile query (JWTs through jwt-kit, HMAC tokens).
        ("FuzzToken", ["Tokens", "Media", "Session"]),
        // SRT stream ids, and MPEG-TS as an SRT publisher sends it (libavformat's demuxer).
        ("FuzzSRTInput", ["SRT", "LibAV", "Media", "CFFmpeg", nio]),
    ]
    // The generator plugin's tool would be linked with -sanitize=fuzzer too (and fail without
    // a fuzz entry point); no fuzz target needs the generated admin API.
    for target in package.targets where target.name == "AdminAPI" {
        target.plugins = []
    }
    package.targets.append(.target(name: "CLibFuzzer", path: "Fuzz/CLibFuzzer"))
    for target in fuzzTargets {
        package.targets.append(
            .executableTarget(
                name: target.name,
                dependencies: [.target(name: "CLibFuzzer")] + target.dependencies,
                path: "Fuzz/\(target.name)",
                swiftSettings: strict
            )
        )
    }
}
