// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Feedstore",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Feedstore", targets: ["Feedstore"]),
        .executable(name: "storectl", targets: ["storectl"]),
        // LMDB's C API, for the benchmarks' raw-LMDB peer; the library itself uses it only in LMDB/.
        .library(name: "CLMDB", targets: ["CLMDB"]),
        // The demo feed, for the benchmarks.
        .library(name: "FeedstoreDemo", targets: ["FeedstoreDemo"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // LMDB from Debian's liblmdb-dev; only Sources/Feedstore/LMDB/ imports it.
        .systemLibrary(
            name: "CLMDB",
            path: "Sources/CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        .target(
            name: "Feedstore",
            dependencies: ["CLMDB"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The demo feed of DESIGN.md (contacts and messages), used by storectl demo and the tests.
        .target(
            name: "FeedstoreDemo",
            dependencies: ["Feedstore"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "storectl",
            dependencies: [
                "Feedstore",
                "FeedstoreDemo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/storectl",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Kills a durable writer at random moments and checks the store after each kill (long soaks).
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
        .testTarget(
            name: "FeedstoreTests",
            dependencies: ["Feedstore", "FeedstoreDemo", "FeedstoreTestSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "StorectlTests",
            dependencies: ["Feedstore", "FeedstoreDemo", "FeedstoreTestSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
