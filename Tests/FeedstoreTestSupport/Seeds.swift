import Foundation

/// Seeds for randomized tests. Swift Testing reports the argument of a failing case, so a failure
/// names its seed; `FEEDSTORE_SEED=n swift test --filter …` replays exactly that seed.
public func testSeeds(_ count: Int, base: UInt64 = 1) -> [UInt64] {
    if let fixed = ProcessInfo.processInfo.environment["FEEDSTORE_SEED"].flatMap(UInt64.init) { return [fixed] }
    return (0..<UInt64(count)).map { base &+ $0 &* 0x9E37_79B9 }
}

/// The sizes of the soaks. `Tools/test` runs each at its quick size, so that the suite takes a
/// few minutes; `Tools/test --long` (`FEEDSTORE_LONG_TESTS=1`, which CI runs too) at its full
/// size: a million records, more seeds, more kills.
public enum TestSize {
    /// Whether the long run was asked for.
    public static let isLong = ProcessInfo.processInfo.environment["FEEDSTORE_LONG_TESTS"] == "1"

    /// `quick` in the quick run, `long` in the long one.
    public static func choose<T>(quick: T, long: T) -> T { isLong ? long : quick }
}

/// Runs `body` on a thread of its own and waits for it. Swift Testing runs synchronous tests on
/// Swift concurrency's shared threads, two on a 2-core machine: a soak that blocks one for
/// minutes starves the async tests beside it. Soaks run their bodies here instead.
public func onOwnThread<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(with: Result { try body() })
        }.start()
    }
}
