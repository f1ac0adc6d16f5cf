import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Simulated power losses (see ``PowerLoss``): `storectl demo mutate` runs under the write
/// recorder, and file states a power loss could leave at points of its run are built and checked.
/// `crash-loop --power-loss` runs the long soaks.
@Suite(.serialized, .blocking) struct PowerLossTests {
    /// Crash states to check: `long` in the long run, half as many in the quick one.
    static func states(_ long: Int) -> Int { TestSize.choose(quick: long / 2, long: long) }

    static func run(_ durability: Durability, states: Int, seed: UInt64) throws -> PowerLoss.Report {
        try withTemporaryDirectory { dir in
            let report = try PowerLoss(durability: durability, seed: seed, storectl: storectlURL, directory: dir).run(states: states)
            print("\(durability.rawValue), seed \(seed): \(report.summary)")
            return report
        }
    }

    /// Runs `workload` alone, and prints what it found under `name`.
    static func run(_ workload: PowerLoss.Workload, _ durability: Durability, seed: UInt64, states: Int, name: String) throws -> PowerLoss.Report {
        try withTemporaryDirectory { dir in
            var report = PowerLoss.Report()
            try PowerLoss(durability: durability, seed: seed, storectl: storectlURL, directory: dir).run(workload, states: states, into: &report)
            print("\(name): \(report.summary)")
            return report
        }
    }

    /// With durability full, no state loses an acknowledged commit or fails to verify.
    @Test(arguments: testSeeds(1, base: 61))
    func fullDurabilityLosesNothingAcknowledged(seed: UInt64) async throws {
        try await onOwnThread { try self.fullDurabilityLosesNothingAcknowledgedOnItsThread(seed: seed) }
    }

    /// The body of ``fullDurabilityLosesNothingAcknowledged(seed:)``, on a thread of its own (``onOwnThread(_:)``).
    func fullDurabilityLosesNothingAcknowledgedOnItsThread(seed: UInt64) throws {
        let report = try Self.run(.full, states: Self.states(90), seed: seed)
        #expect(report.states >= Self.states(90))
        #expect(PowerLoss.Workload.all.allSatisfy { report.statesByWorkload[$0.name, default: 0] > 0 }, "\(report.statesByWorkload)")
        #expect(report.acknowledgedLost == 0 && report.failedVerify == 0, "seed \(seed): \(report.problems)")
    }

    /// Seeds whose crash states once failed: states whose data file ends before pages only the
    /// free list names (full 1203; relaxed 1093 and 1203), and a store made by the writer whose
    /// commits often changed nothing, which the checker took for a recorder not loaded (3000).
    @Test(arguments: [(Durability.full, UInt64(1203)), (.relaxed, 1093), (.relaxed, 1203), (.full, 3000)])
    func seedsThatOnceFailedPass(durability: Durability, seed: UInt64) async throws {
        try await onOwnThread {
            let report = try Self.run(durability, states: 300, seed: seed)
            #expect(report.acknowledgedLost == 0 && report.failedVerify == 0, "\(durability.rawValue), seed \(seed): \(report.problems)")
        }
    }

    /// With durability relaxed, every state is consistent and only commits after the last
    /// completed sync are missing.
    @Test(arguments: testSeeds(1, base: 71))
    func relaxedDurabilityStaysConsistent(seed: UInt64) async throws {
        try await onOwnThread { try self.relaxedDurabilityStaysConsistentOnItsThread(seed: seed) }
    }

    /// The body of ``relaxedDurabilityStaysConsistent(seed:)``, on a thread of its own (``onOwnThread(_:)``).
    func relaxedDurabilityStaysConsistentOnItsThread(seed: UInt64) throws {
        let report = try Self.run(.relaxed, states: Self.states(90), seed: seed)
        #expect(report.states >= Self.states(90))
        #expect(report.acknowledgedLost == 0 && report.failedVerify == 0, "seed \(seed): \(report.problems)")
    }

    /// Without syncs the same checks find damaged stores and lost commits: the checker sees what
    /// a power loss breaks (and the store's page check turns the damage into typed errors).
    @Test func withoutSyncsAPowerLossDamagesTheStore() async throws {
        try await onOwnThread { try self.withoutSyncsAPowerLossDamagesTheStoreOnItsThread() }
    }

    /// The body of ``withoutSyncsAPowerLossDamagesTheStore()``, on a thread of its own (``onOwnThread(_:)``).
    func withoutSyncsAPowerLossDamagesTheStoreOnItsThread() throws {
        let report = try Self.run(.none, states: Self.states(90), seed: 2)
        #expect(report.failedVerify > 0)
        #expect(report.problems.contains { $0.contains("damaged") || $0.contains("truncated") || $0.contains("verify") })
    }

    /// A replica's relaxed commits reach its watchers before they are synced, each synced before
    /// the next begins. Once the newest commit is rolled back, as a follower does after the
    /// machine went down, every state verifies clean and keeps every acknowledged commit but
    /// the last.
    @Test(arguments: testSeeds(TestSize.choose(quick: 1, long: 4), base: 81))
    func commitsPublishedBeforeTheirSyncsRollBackToAWholeCommit(seed: UInt64) throws {
        let report = try Self.run(.publishedBeforeSync, .relaxed, seed: seed, states: Self.states(80), name: "published before sync, seed \(seed)")
        #expect(report.states >= Self.states(80) / 2)
        #expect(report.acknowledgedLost == 0 && report.failedVerify == 0, "seed \(seed): \(report.problems)")
    }

    /// The same states opened without the roll-back: some newest commits are damaged, which is
    /// why a follower rolls back after the machine went down.
    @Test func withoutTheRollBackCommitsPublishedBeforeTheirSyncsAreDamaged() throws {
        var workload = PowerLoss.Workload.publishedBeforeSync
        workload.withoutRollBack = true
        let report = try Self.run(workload, .relaxed, seed: 3, states: 80, name: "published before sync, without the roll-back")
        #expect(report.failedVerify > 0, "\(report.problems)")
    }

    /// Commits made durable through a commit log, one row or 48 at a time with a cursor moved
    /// and the journal trimmed, or in bulk into a map the writer grows: each state, opened first by a
    /// writer keeping the log (as the first process after the machine went down), keeps every
    /// acknowledged commit and cursor position, and verifies clean.
    @Test(arguments: [PowerLoss.Workload.loggedCommits, .loggedGroups, .loggedMapGrowth])
    func commitsThroughACommitLogSurviveAPowerLoss(workload: PowerLoss.Workload) throws {
        let report = try Self.run(workload, .full, seed: 9, states: Self.states(40), name: "\(workload)")
        #expect(report.states >= Self.states(40) * 3 / 4)
        #expect(report.acknowledgedLost == 0 && report.failedVerify == 0, "\(report.problems)")
    }

    /// The same run replayed as if the log had never been synced: acknowledged commits are lost.
    @Test func withoutItsSyncsACommitLogLosesAcknowledgedCommits() throws {
        var unsynced = PowerLoss.Workload.loggedCommits
        unsynced.withoutSyncs = true
        let report = try Self.run(unsynced, .full, seed: 9, states: Self.states(30), name: "commits through a commit log without syncs")
        #expect(report.acknowledgedLost > 0, "\(report.problems)")
    }

    /// Upgrades of stores written in formats 1 and 2, and compactions, checked at every step
    /// of their last writes and at random ones before: an upgrade leaves the old format or the
    /// new one with every record and commit (the new one once reported), a compaction no copy or
    /// a whole one (a whole one once reported).
    @Test(arguments: [PowerLoss.Workload.formatOneUpgrade, .formatTwoUpgrade, .compaction, .creation])
    func upgradesAndCompactionsSurviveAPowerLoss(workload: PowerLoss.Workload) throws {
        let report = try Self.run(workload, .full, seed: 5, states: Self.states(40), name: "\(workload)")
        #expect(report.states >= 10)
        #expect(report.acknowledgedLost == 0 && report.failedVerify == 0, "\(report.problems)")
    }

    /// The same runs replayed as if nothing had been synced: the checker finds what that breaks
    /// (a reported upgrade or copy lost, a copy renamed before its pages reached the disk).
    @Test(arguments: [PowerLoss.Workload.formatOneUpgrade, .formatTwoUpgrade, .compaction, .creation])
    func withoutSyncsUpgradesAndCompactionsBreak(workload: PowerLoss.Workload) throws {
        var unsynced = workload
        unsynced.withoutSyncs = true
        let report = try Self.run(unsynced, .full, seed: 5, states: Self.states(40), name: "\(workload) without syncs")
        #expect(report.acknowledgedLost + report.failedVerify > 0, "\(report.problems)")
    }

    /// A store made in directories that did not exist keeps its first acknowledged commits
    /// through a power loss only because the names of its directories and data file are synced
    /// when it is made: replayed without the directory syncs (files still synced), the states
    /// where a name was lost lose acknowledged commits.
    @Test func aNewStoreNeedsItsDirectoryEntriesSynced() throws {
        var unsynced = PowerLoss.Workload.creation
        unsynced.withoutDirectorySyncs = true
        let report = try Self.run(unsynced, .full, seed: 7, states: Self.states(40), name: "store creation without directory syncs")
        #expect(report.acknowledgedLost > 0, "\(report.problems)")
        #expect(report.problems.contains { $0.contains("lost with") }, "\(report.problems)")
    }

    /// `storectl compact` makes its copy durable before it returns: the copy is synced, then
    /// renamed into place, then the rename is synced in the destination's directory (and the new
    /// directory in its parent). Without the last syncs a power loss could undo a copy that
    /// returned.
    @Test func aCompactedCopyIsDurableOnceCompactReturns() throws {
        try withTemporaryDirectory { dir in
            let source = dir + "/store", destination = dir + "/copy"
            do {
                let store = try Store(path: source, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
                var feed = DemoFeed(seed: 4)
                try feed.populate(store, messages: 300, contacts: 10)
                store.close()
            }
            let recorder = try PowerLoss.buildRecorder(in: dir)
            let log = dir + "/writes.log"
            let copied = try runTool(storectlURL, ["compact", source, destination], environment: ["LD_PRELOAD": recorder, "FEEDSTORE_WRITE_LOG": log])
            try #require(copied.status == 0, "\(copied.stderr)")
            let operations = try WriteLog(contentsOf: log).operations
            let lastWrite = try #require(operations.lastIndex { if case .write = $0 { true } else { false } })
            let renamed = try #require(operations.firstIndex { $0 == .rename(from: destination + "/data.mdb.partial", to: destination + "/data.mdb") },
                                       "\(operations.filter { if case .write = $0 { false } else { true } })")
            #expect(operations[lastWrite..<renamed].contains(.sync), "the copy was not synced before its rename")
            let directorySyncs = operations[renamed...].compactMap { if case let .directorySync(path) = $0 { path } else { nil } }
            #expect(directorySyncs.contains(destination), "the rename was not synced: \(directorySyncs)")
            #expect(directorySyncs.contains(dir), "the new directory was not synced in its parent: \(directorySyncs)")
            let store = try Store(path: destination, options: StoreOptions(readOnly: true))
            #expect(try store.verify().isEmpty)
        }
    }
}
