import Foundation

/// A fresh directory under the system's temporary directory, removed when the body returns.
public func withTemporaryDirectory<R>(_ body: (String) throws -> R) throws -> R {
    let path = NSTemporaryDirectory() + "feedstore-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// The async form of ``withTemporaryDirectory(_:)``.
public func withTemporaryDirectory<R>(_ body: (String) async throws -> R) async throws -> R {
    let path = NSTemporaryDirectory() + "feedstore-tests-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}
