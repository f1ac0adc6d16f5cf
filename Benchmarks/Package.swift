// swift-tools-version: 6.1
import Foundation
import PackageDescription

// SwiftPM names a path dependency after its directory, which depends on where the repository was
// cloned; compute it rather than assume it.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent.lowercased()

// Benchmarks live in their own package so the library's users never resolve their dependencies.
let package = Package(
    name: "FeedstoreBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(path: ".."),
    ],
    targets: [
        // The release-built driver: `swift run -c release --package-path Benchmarks feedstore-bench …`
        .executableTarget(
            name: "feedstore-bench",
            dependencies: [
                .product(name: "Feedstore", package: root),
                .product(name: "CLMDB", package: root),
                .product(name: "FeedstoreDemo", package: root),
            ],
            path: "Sources/FeedstoreBench",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
