import Feedstore
import FeedstoreTestSupport
import Foundation
import Testing

/// Simulated power losses (see ``PowerLoss``): `storectl demo mutate` runs under the write
/// recorder, and file states a power loss could leave at points of its run are built and checked.
/// `crash-loop --power-loss` runs the long soaks.
@Suite(.serialized) struct PowerLossTests {
    static func run(_ durability: Durability, states: Int, seed: UInt64) throws -> PowerLoss.Report {
        try withTemporaryDirectory { dir in
            let report = try PowerLoss(durability: durability, seed: seed, storectl: storectlURL, directory: dir).run(states: states)
            print("\(durability.rawValue), seed \(seed): \(report.summary)")
            return report
        }
    }

    /// With durability full, no state loses an acknowledged commit or fails to verify.
    @Test(arguments: testSeeds(1, base: 61))
    func fullDurabilityLosesNothingAcknowledged(seed: UInt64) throws {
        let report = try Self.run(.full, states: 90, seed: seed)
        #expect(report.states >= 90)
        #expect(report.acknowledgedLost == 0 && report.failedVerify == 0, "seed \(seed): \(report.problems)")
    }

    /// With durability relaxed, every state is consistent and only commits after the last
    /// completed sync are missing.
    @Test(arguments: testSeeds(1, base: 71))
    func relaxedDurabilityStaysConsistent(seed: UInt64) throws {
        let report = try Self.run(.relaxed, states: 90, seed: seed)
        #expect(report.states >= 90)
        #expect(report.acknowledgedLost == 0 && report.failedVerify == 0, "seed \(seed): \(report.problems)")
    }

    /// Without syncs the same checks find damaged stores and lost commits: the checker sees what
    /// a power loss breaks (and the store's page check turns the damage into typed errors).
    @Test func withoutSyncsAPowerLossDamagesTheStore() throws {
        let report = try Self.run(.none, states: 90, seed: 2)
        #expect(report.failedVerify > 0)
        #expect(report.problems.contains { $0.contains("damaged") || $0.contains("truncated") || $0.contains("verify") })
    }
}
