import Foundation

/// The package's root directory (this file is `Tests/FeedstoreTestSupport/PackageRoot.swift`),
/// for tests that read the sources, the documentation or the tools.
public let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
