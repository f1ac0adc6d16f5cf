import Foundation

/// Seeds for randomized tests. Swift Testing reports the argument of a failing case, so a failure
/// names its seed; `FEEDSTORE_SEED=n swift test --filter …` replays exactly that seed.
public func testSeeds(_ count: Int, base: UInt64 = 1) -> [UInt64] {
    if let fixed = ProcessInfo.processInfo.environment["FEEDSTORE_SEED"].flatMap(UInt64.init) { return [fixed] }
    return (0..<UInt64(count)).map { base &+ $0 &* 0x9E37_79B9 }
}
