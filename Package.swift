// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "Feedstore",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)],
    products: [
        .library(name: "Feedstore", targets: ["Feedstore"]),
        .library(name: "FeedstoreJetStream", targets: ["FeedstoreJetStream"]),
        .library(name: "FeedstoreLive", targets: ["FeedstoreLive"]),
        .library(name: "FeedstoreHummingbird", targets: ["FeedstoreHummingbird"]),
        .executable(name: "storectl", targets: ["storectl"]),
        .executable(name: "feedstore-demo", targets: ["feedstore-demo"]),
    ],
    // Where LMDB comes from: the system's library (the default: Linux, and macOS with Homebrew),
    // or compiled into the package from JadenGeller/swift-lmdb, for apps on Apple platforms, which
    // have no system LMDB: LMDB 0.9.70 built to lock with process-shared POSIX mutexes in its lock
    // file, which the App Sandbox allows. An app picks the second in its own manifest:
    // `.package(url: …, from: …, traits: ["BundledLMDB"])`. SwiftPM resolves swift-lmdb only
    // when that trait is on.
    traits: [
        .trait(name: "SystemLMDB", description: "Link the system's LMDB (Debian's liblmdb-dev, Homebrew's lmdb)."),
        .trait(name: "BundledLMDB", description: "Compile LMDB 0.9.70 into the package (JadenGeller/swift-lmdb: POSIX mutexes, no System V semaphores), for Apple platforms."),
        .default(enabledTraits: ["SystemLMDB"]),
    ],
    dependencies: [
        .package(url: "https://github.com/JadenGeller/swift-lmdb", exact: "0.1.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // How replication reports: logs and metrics through the server-side Swift interfaces,
        // whose backends the application chooses; storectl serves the metrics to Prometheus.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The WebSocket server that FeedstoreHummingbird mounts live queries on.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // The system's LMDB (Debian's liblmdb-dev, Homebrew's lmdb), or the bundled one's module
        // CLMDB: only Sources/Feedstore/LMDB/ imports either, and with `internal import`, so
        // neither shows in the library's interface.
        .systemLibrary(
            name: "CFeedstoreLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"]), .brew(["lmdb"])]
        ),
        .target(
            name: "Feedstore",
            dependencies: [
                .target(name: "CFeedstoreLMDB", condition: .when(traits: ["SystemLMDB"])),
                .product(name: "CLMDB", package: "swift-lmdb", condition: .when(traits: ["BundledLMDB"])),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The NATS C client (Debian's libnats-dev, Homebrew's cnats), for the JetStream module
        // only: users of the core library need neither it nor a server. Only
        // Sources/FeedstoreJetStream/NATS/ imports it.
        .systemLibrary(
            name: "CFeedstoreNATS",
            pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"]), .brew(["cnats"])]
        ),
        // OpenSSL's libcrypto (Debian's libssl-dev, Homebrew's openssl), for the SHA-256 digests
        // of snapshots; only Sources/FeedstoreJetStream/Snapshots/SHA256.swift imports it.
        .systemLibrary(
            name: "CFeedstoreCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl"])]
        ),
        // Ships a store's journal to a NATS JetStream stream and follows it into replicas.
        .target(
            name: "FeedstoreJetStream",
            dependencies: ["Feedstore", "CFeedstoreNATS", "CFeedstoreCrypto",
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "CoreMetrics", package: "swift-metrics")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Live queries for one connection, whatever carries its frames: the protocol (JSON text
        // frames) and the session that turns a client's frames into batches. No server here.
        .target(
            name: "FeedstoreLive",
            dependencies: ["Feedstore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Live queries as WebSocket connections on a Hummingbird 2 router: authentication, the
        // connection's two directions, a client that stops reading.
        .target(
            name: "FeedstoreHummingbird",
            dependencies: ["FeedstoreLive",
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                           .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOConcurrencyHelpers", package: "swift-nio")],
            resources: [.copy("Web/feedstore-live.js")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The demo feed (contacts and messages) of storectl demo and the tests; not a product.
        .target(
            name: "FeedstoreDemo",
            dependencies: ["Feedstore"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The demo's console: `demo run` (what the README's first command shows) and the batch
        // printer, shared by storectl and feedstore-demo.
        .target(
            name: "DemoConsole",
            dependencies: ["Feedstore", "FeedstoreDemo", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Tools/DemoConsole",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The demo alone, without the servers and replication of storectl, so that it builds in
        // a fraction of storectl's time (Tools/demo).
        .executableTarget(
            name: "feedstore-demo",
            dependencies: ["DemoConsole", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Tools/feedstore-demo",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "storectl",
            dependencies: [
                "Feedstore",
                "FeedstoreDemo",
                "DemoConsole",
                "FeedstoreJetStream",
                "FeedstoreLive",
                "FeedstoreHummingbird",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Tools/storectl",
            resources: [.copy("Web/inbox.html")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Kills a durable writer at random moments and checks the store after each kill, or with
        // --power-loss checks the file states a power loss could leave (long soaks).
        .executableTarget(
            name: "crash-loop",
            dependencies: ["FeedstoreTestSupport"],
            path: "Tools/crash-loop",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Shared by the test targets and the crash loop: demo entities, a model, seeded randomness,
        // running the built tools.
        .target(
            name: "FeedstoreTestSupport",
            dependencies: ["Feedstore", "FeedstoreDemo"],
            path: "Tests/FeedstoreTestSupport",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // `@Suite(.blocking)`: threads of their own for suites whose tests hold their thread, so
        // that Swift concurrency's shared threads stay free for the tests that suspend;
        // `@Suite(.ownThreads)` for suites whose tests wait for events under a guard.
        .target(
            name: "FeedstoreTestTraits",
            path: "Tests/FeedstoreTestTraits",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "FeedstoreTests",
            dependencies: ["Feedstore", "FeedstoreDemo", "FeedstoreTestSupport", "FeedstoreTestTraits"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // A real nats-server on loopback, started by the JetStream tests and benchmarks.
        .target(
            name: "NATSTestServer",
            path: "Tests/NATSTestServer",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "JetStreamTests",
            dependencies: ["Feedstore", "FeedstoreJetStream", "FeedstoreDemo", "FeedstoreTestSupport", "FeedstoreTestTraits", "NATSTestServer"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "FeedstoreLiveTests",
            dependencies: ["Feedstore", "FeedstoreLive", "FeedstoreHummingbird", "FeedstoreDemo", "FeedstoreTestSupport", "FeedstoreTestTraits", "NATSTestServer",
                           .product(name: "Hummingbird", package: "hummingbird"),
                           .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                           .product(name: "HummingbirdWSClient", package: "hummingbird-websocket")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "StorectlTests",
            dependencies: ["Feedstore", "FeedstoreDemo", "FeedstoreTestSupport", "FeedstoreTestTraits", "NATSTestServer"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
