// swift-tools-version: 6.2
import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory, which depends on where the repository was
// cloned; compute it rather than assume it.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

// Benchmarks live in their own package so the library's users never resolve their dependencies
// (GRDB, the peer; ordo-one's benchmark runner).
let package = Package(
    name: "FeedstoreBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        // The live benchmark's servers and clients.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // LMDB's C API for the raw-LMDB peer (the library keeps its own LMDB module internal).
        .systemLibrary(name: "CLMDBPeer", pkgConfig: "lmdb", providers: [.apt(["liblmdb-dev"])]),
        // The demo feed of storectl and the tests (a link to the library package's sources: the
        // library does not export it as a product).
        .target(
            name: "DemoFeed",
            dependencies: [.product(name: "Feedstore", package: root)],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // A real nats-server on loopback for the JetStream benchmark (a link to the tests' own).
        .target(name: "NATSTestServer", swiftSettings: [.swiftLanguageMode(.v6)]),
        // The release-built driver for scaling runs and peers:
        // `swift run -c release --package-path Benchmarks feedstore-bench …`
        .executableTarget(
            name: "feedstore-bench",
            dependencies: [
                .product(name: "Feedstore", package: root),
                .product(name: "FeedstoreJetStream", package: root),
                .product(name: "FeedstoreLive", package: root),
                .product(name: "FeedstoreHummingbird", package: root),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                "CLMDBPeer",
                "DemoFeed",
                "NATSTestServer",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Sources/FeedstoreBench",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Micro-benchmarks with committed thresholds: `swift package --package-path Benchmarks benchmark`
        .executableTarget(
            name: "FeedstoreMicro",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Feedstore", package: root),
                "DemoFeed",
            ],
            path: "Benchmarks/FeedstoreMicro",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
