import FeedstoreTestSupport
import Foundation
import Testing

/// The crash loop in CI size: a durable writer process killed with SIGKILL at random moments,
/// and after every kill nothing acknowledged is lost and the store verifies clean (see
/// ``CrashLoop``). `Tools/crash-loop --cycles N` runs long soaks.
@Suite struct CrashLoopTests {
    @Test(arguments: testSeeds(1, base: 77)) func killedWritersLoseNothingAcknowledged(seed: UInt64) async throws {
        try await onOwnThread { try self.killedWritersLoseNothingAcknowledgedOnItsThread(seed: seed) }
    }

    /// The body of ``killedWritersLoseNothingAcknowledged(seed:)``, on a thread of its own (``onOwnThread(_:)``).
    func killedWritersLoseNothingAcknowledgedOnItsThread(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let cycles = TestSize.choose(quick: 30, long: 200)
            let report = try CrashLoop(path: dir + "/s", storectl: storectlURL, seed: seed).run(cycles: cycles)
            #expect(report.cycles == cycles)
            // Most kills land while the writer is committing, so the checks saw real crashes.
            #expect(report.killsWhileWriting > cycles / 2, "\(report)")
        }
    }
}
