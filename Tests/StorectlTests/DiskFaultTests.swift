@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A writer on a failing disk (it refuses a write or a sync; `Tools/fault-injector` makes
/// `storectl demo mutate` meet it). With LMDB's syncs, a commit whose page write or sync failed
/// fails alone, and the writer goes on. Through a commit log: a commit whose log sync failed is
/// made durable by syncing LMDB's file instead and acknowledged; when the log cannot be written
/// at all, the store stops in the process (the commit LMDB made without it fails, and so does
/// every later transaction, reads included); when LMDB cannot write a commit whose record is in
/// the log already, the record is taken back, and while the disk refuses that too, nothing else
/// commits; after a checkpoint's sync of LMDB's file fails, the commit that brought it on is
/// acknowledged (the log holds it), and nothing commits until the store is opened again. A
/// failed write of a meta page stops LMDB in the process until the store is opened again. Each
/// way every acknowledged commit, and no other, is in the store when it is opened again, and the
/// store is consistent; a read after a failed commit sees the last acknowledged one, or is
/// refused.
@Suite(.blocking) struct DiskFaultTests {
    /// Runs 30 commits of the demo feed with `fault`, through the commit log unless
    /// `commitLog` is false; returns the run and the last sequence it acknowledged. With
    /// `goingOn`, the writer makes its next commit after one fails, rather than exiting.
    static func mutate(_ path: String, fault: String, in dir: String, goingOn: Bool = false, commitLog: Bool = true, arguments: [String] = [])
        throws -> (run: (status: Int32, stdout: String, stderr: String), acknowledged: UInt64)
    {
        let store = try populatedDemoStore(at: path, seed: 3, messages: 50, contacts: 5)
        let populated = try store.read { try $0.journalBounds().last }
        store.close()
        let injector = try buildPreloadLibrary("Tools/fault-injector/faults.c", named: "feedstore-faults", in: dir)
        let run = try runTool(storectlURL, ["demo", "mutate", path, "--commits", "30"] + (commitLog ? ["--commit-log"] : [])
                                  + (goingOn ? ["--goes-on-after-failures"] : []) + arguments,
                              environment: ["LD_PRELOAD": injector, "FEEDSTORE_FAULT": fault])
        let acknowledged = run.stdout.split(separator: "\n").filter { $0.hasPrefix("committed ") }.compactMap { $0.split(separator: " ").last.flatMap { UInt64($0) } }.last ?? 0
        expectReadsSeeTheLastAcknowledgedCommit(run.stdout, populated: populated)
        return (run, acknowledged)
    }

    /// The writer's output lines, and where among them the failed commits are (`failed <error>`).
    static func failures(in stdout: String) -> (lines: [Substring], failures: [Int]) {
        let lines = stdout.split(separator: "\n")
        return (lines, lines.indices.filter { lines[$0].hasPrefix("failed ") })
    }

    /// After each failed commit the writer reads (`reads through <sequence>`): a read sees the
    /// last acknowledged commit, not the one that failed, or is refused.
    static func expectReadsSeeTheLastAcknowledgedCommit(_ stdout: String, populated: UInt64) {
        var last = populated
        for line in stdout.split(separator: "\n") {
            if line.hasPrefix("committed "), let sequence = line.split(separator: " ").last.flatMap({ UInt64($0) }) { last = sequence }
            if line.hasPrefix("reads through "), let sequence = line.split(separator: " ").last.flatMap({ UInt64($0) }) {
                #expect(sequence == last, "after a failed commit a read saw \(sequence), the last acknowledged being \(last): \(stdout)")
            }
        }
    }

    /// The store as the next writer finds it (recovering it from the log, when it keeps one),
    /// checked.
    static func reopened(_ path: String, commitLog: Bool = true) throws -> UInt64 {
        var options = StoreOptions(durability: .full)
        options.keepsCommitLog = commitLog
        let store = try Store(path: path, entities: DemoFeed.entities, options: options)
        defer { store.close() }
        #expect(try store.verify().isEmpty)
        return try store.read { try $0.journalBounds().last }
    }

    /// With LMDB's own syncs, a commit whose sync or page write fails is refused alone: the
    /// writer's next commits are made and acknowledged.
    @Test(arguments: ["data-sync:12", "page-write:20"])
    func withLMDBsSyncsAFailedSyncOrPageWriteFailsThatCommitAlone(fault: String) throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            let (run, acknowledged) = try Self.mutate(path, fault: fault, in: dir, goingOn: true, commitLog: false)
            #expect(run.stderr.contains("feedstore-fault: a"), "the fault did not come: \(run.stderr)")
            #expect(run.status == 0, "\(run.stderr)")
            let (lines, failures) = Self.failures(in: run.stdout)
            #expect(failures.count == 1 && lines[failures[0]].contains("Input/output error"), "\(run.stdout)")
            #expect(failures.first.map { lines[($0 + 1)...].contains { $0.hasPrefix("committed ") } } == true, "\(run.stdout)")
            #expect(try Self.reopened(path, commitLog: false) == acknowledged)
        }
    }

    @Test func aCommitWhoseLogSyncFailsIsSyncedInLMDBAndAcknowledged() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            let (run, acknowledged) = try Self.mutate(path, fault: "sync:12", in: dir)
            #expect(run.stderr.contains("feedstore-fault"), "the fault did not come: \(run.stderr)")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(acknowledged > 0)
            #expect(try Self.reopened(path) == acknowledged)
        }
    }

    /// The log takes no more writes: the commit it could not take is synced by LMDB, and the
    /// checkpoint that must follow cannot start the log again. LMDB's file holds that commit, but
    /// neither the log nor a checkpoint does, so the store stops in the process: the commit
    /// fails, and every later transaction, reads included, is refused, saying to open the store
    /// again. Opened again, it holds every acknowledged commit and not that one.
    @Test func aLogThatCannotBeWrittenStopsTheStoreUntilItIsOpenedAgainAndLosesNoAcknowledgedCommit() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            let (run, acknowledged) = try Self.mutate(path, fault: "write:12", in: dir, goingOn: true)
            #expect(run.stderr.contains("feedstore-fault"), "the fault did not come: \(run.stderr)")
            #expect(run.status == 0, "\(run.stderr)")
            let (lines, failures) = Self.failures(in: run.stdout)
            #expect(failures.first.map { lines[$0].contains("the commit log of store") && lines[$0].contains("Input/output error") } == true,
                    "\(run.stdout)")
            #expect(failures.count > 1 && failures.allSatisfy { lines[$0].contains("could not be made durable") && lines[$0].contains("open it again") },
                    "\(run.stdout)")
            #expect(failures.first.map { !lines[$0...].contains { $0.hasPrefix("committed ") } } == true, "\(run.stdout)")
            let reads = lines.filter { $0.hasPrefix("reads ") }
            #expect(!reads.isEmpty && reads.allSatisfy { $0.hasPrefix("reads refused: ") && $0.contains("reads included") }, "\(run.stdout)")
            #expect(acknowledged > 0)
            #expect(try Self.reopened(path) == acknowledged)
            let again = try runTool(storectlURL, ["demo", "mutate", path, "--commits", "3", "--seed", "2", "--commit-log"])
            #expect(again.status == 0 && again.stdout.contains("committed \(acknowledged + 1)"), "\(again.stdout) \(again.stderr)")
        }
    }

    /// A commit's log sync fails, then the sync of LMDB's file that would make the commit durable
    /// instead. A one-row commit's record is synced before LMDB commits, so LMDB syncs the commit
    /// itself and fails it, with nothing of it visible; later writes are refused until the store
    /// is opened again. A group commit's record is synced while LMDB commits (it is large), so
    /// the commit is made when the syncs fail: the store stops in the process, reads included.
    /// Either way, opened again, the store holds every acknowledged commit and not that one.
    @Test(arguments: [1, 400])
    func aCommitThatCanBeMadeDurableNeitherInTheLogNorInLMDBsFileFails(rowsPerCommit: Int) throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            let (run, acknowledged) = try Self.mutate(path, fault: "sync:12+data-sync", in: dir, goingOn: true,
                                                      arguments: ["--per-commit", "\(rowsPerCommit)"])
            #expect(run.stderr.contains("feedstore-fault: a sync of data.mdb fails"), "the fault did not come: \(run.stderr)")
            #expect(run.status == 0, "\(run.stderr)")
            let (lines, failures) = Self.failures(in: run.stdout)
            #expect(failures.count > 1 && failures.allSatisfy { lines[$0].contains("Input/output error") }, "\(run.stdout)")
            #expect(failures.first.map { !lines[$0...].contains { $0.hasPrefix("committed ") } } == true, "\(run.stdout)")
            let reads = lines.filter { $0.hasPrefix("reads ") }
            if rowsPerCommit == 1 {
                #expect(failures.dropFirst().allSatisfy { lines[$0].contains("a sync of LMDB's file failed") && lines[$0].contains("open it again") },
                        "\(run.stdout)")
                #expect(reads.allSatisfy { $0.hasPrefix("reads through ") }, "\(run.stdout)")
            } else {
                #expect(failures.allSatisfy { lines[$0].contains("could not be made durable") }, "\(run.stdout)")
                #expect(reads.allSatisfy { $0.hasPrefix("reads refused: ") }, "\(run.stdout)")
            }
            #expect(acknowledged > 0)
            #expect(try Self.reopened(path) == acknowledged)
        }
    }

    @Test func aCommitLMDBCannotWriteIsTakenBackOutOfTheLog() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            let (run, acknowledged) = try Self.mutate(path, fault: "data-write:40", in: dir)
            #expect(run.stderr.contains("feedstore-fault: a write to data.mdb fails"), "the fault did not come: \(run.stderr)")
            #expect(run.stderr.contains("Input/output error"), "\(run.stderr)")
            #expect(acknowledged > 0)
            // The failed commit's record went to the log before LMDB wrote its pages; had it
            // stayed there, the recovery would make that commit, which no one was told of.
            #expect(try Self.reopened(path) == acknowledged)
        }
    }

    /// A checkpoint's sync of LMDB's file fails. The log holds the commit that brought the
    /// checkpoint on, which is acknowledged. The kernel reports a failed write of a file's pages
    /// to one sync only, so the next checkpoint's sync could succeed with pages missing: every
    /// later write is refused unwritten, saying to open the store again, rather than checkpoint
    /// after pages that may be lost. Opened again, the store holds every acknowledged commit and
    /// no other.
    @Test func afterACheckpointsSyncFailsNoWriteIsMadeUntilTheStoreIsOpenedAgain() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            // A checkpoint every commit or two; the first sync of LMDB's file is the checkpoint
            // the store opens with.
            let (run, acknowledged) = try Self.mutate(path, fault: "data-sync:4", in: dir, goingOn: true,
                                                      arguments: ["--commit-log-checkpoint-pages", "65536"])
            #expect(run.stderr.contains("feedstore-fault: a"), "the fault did not come: \(run.stderr)")
            #expect(run.status == 0, "\(run.stderr)")
            let (lines, failures) = Self.failures(in: run.stdout)
            #expect(acknowledged > 0)
            #expect(failures.first.map { lines[$0].contains("a sync of LMDB's file failed") && lines[$0].contains("Input/output error") } == true,
                    "\(run.stdout)")
            // Every write after it was refused, none made.
            #expect(failures.count > 1 && failures.allSatisfy { lines[$0].contains("open it again") }, "\(run.stdout)")
            #expect(failures.first.map { !lines[($0 + 1)...].contains { $0.hasPrefix("committed ") } } == true, "\(run.stdout)")
            #expect(try Self.reopened(path) == acknowledged)
        }
    }

    /// The disk refuses the failed commit's take-back and the checkpoint after it, and the
    /// writer exits: the record stays in the log, yet the next process, in the same start of the
    /// machine, does not make that commit again (LMDB's file holds every commit that was made).
    @Test func aFailedCommitWhoseRecordStaysInTheLogIsNotMadeAgain() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            let (run, acknowledged) = try Self.mutate(path, fault: "data-write:40+log:1000", in: dir)
            #expect(run.stderr.contains("feedstore-fault: a write to data.mdb fails"), "the fault did not come: \(run.stderr)")
            #expect(run.stderr.contains("feedstore-fault: a call on commits.log fails"), "the log's fault did not come: \(run.stderr)")
            #expect(run.status != 0)
            #expect(acknowledged > 0)
            #expect(try Self.reopened(path) == acknowledged)
        }
    }

    /// The disk refuses the take-back and the checkpoint, then both again for the next commit,
    /// then recovers: that next commit is refused, unwritten, with a typed error saying why; the
    /// one after it takes the record back and commits, and so do the rest.
    @Test func noCommitIsMadeWhileAFailedCommitsRecordCannotBeTakenBack() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            let (run, acknowledged) = try Self.mutate(path, fault: "page-write:20+log:4", in: dir, goingOn: true)
            #expect(run.status == 0, "\(run.stderr)")
            let (lines, failures) = Self.failures(in: run.stdout)
            #expect(failures.count == 2, "\(run.stdout)")
            #expect(failures.last.map { lines[$0].contains("could not be taken back out of the log, so no commit is made until it can") } == true,
                    "\(run.stdout)")
            // The writer went on: commits after the refusal were made and acknowledged.
            #expect(failures.last.map { lines[($0 + 1)...].contains { $0.hasPrefix("committed ") } } == true, "\(run.stdout)")
            #expect(try Self.reopened(path) == acknowledged)
        }
    }

    /// A write of a commit's meta page fails: LMDB takes no more transactions in the process,
    /// and each later write says to open the store again; opened again, the store holds every
    /// acknowledged commit and takes writes.
    @Test(arguments: [true, false])
    func afterAFailedMetaPageWriteWritesSayToOpenTheStoreAgain(commitLog: Bool) throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/demo"
            let (run, acknowledged) = try Self.mutate(path, fault: "meta-write:12", in: dir, goingOn: true, commitLog: commitLog)
            #expect(run.stderr.contains("feedstore-fault: a write to data.mdb fails"), "the fault did not come: \(run.stderr)")
            let (lines, failures) = Self.failures(in: run.stdout)
            #expect(failures.first.map { lines[$0].contains("Input/output error") } == true, "\(run.stdout)")
            #expect(failures.count > 1 && failures.dropFirst().allSatisfy { lines[$0].contains("close every handle of the store in this process and open it again") },
                    "\(run.stdout)")
            #expect(failures.first.map { !lines[$0...].contains { $0.hasPrefix("committed ") } } == true, "\(run.stdout)")
            #expect(failures.first.map { lines[$0...].filter { $0.hasPrefix("reads ") }.allSatisfy { $0.hasPrefix("reads refused: ") } } == true,
                    "\(run.stdout)")
            #expect(acknowledged > 0)
            #expect(try Self.reopened(path, commitLog: commitLog) == acknowledged)
            let again = try runTool(storectlURL, ["demo", "mutate", path, "--commits", "3", "--seed", "2"] + (commitLog ? ["--commit-log"] : []))
            #expect(again.status == 0 && again.stdout.contains("committed \(acknowledged + 1)"), "\(again.stdout) \(again.stderr)")
        }
    }
}
