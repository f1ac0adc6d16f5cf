import CLMDBPeer
@_spi(Replication) import Feedstore
import DemoFeed
import Foundation
import GRDB

/// Durable one-row commits per second, each writer committing one new message at a time and
/// waiting for it to be on disk: Feedstore (`.full`; concurrent async writers are group-committed),
/// GRDB (`synchronous = FULL`, one writer connection, so writers queue), raw LMDB (synced commits
/// of one put), and raw LMDB committing Feedstore's own puts for each row (its record, index
/// entries and journal entry, read back from Feedstore's files as ``RecordedPuts`` does), which
/// is the floor of what Feedstore's layout costs. Also the bytes each one writes per row (the
/// process's write calls: pages and meta pages, or the WAL and its checkpoints), and for one
/// writer the pages of a one-row commit, by tree.
struct DurableCommits {
    let directory: String
    /// Commits each writer makes.
    let commitsPerWriter: Int
    /// One-row commits sampled, after the timed ones, for the pages by tree.
    var pageSamples = 20

    struct Result {
        var writers: Int
        var feedstore: Double
        /// Rows Feedstore's group commit put in one LMDB commit (and its syncs), on average.
        var rowsPerCommit: Double
        var grdb: Double
        var rawLMDB: Double
        /// Raw LMDB committing the puts Feedstore made for each row.
        var rawFeedstorePuts: Double
        /// The same puts in one tree (``RecordedPuts/Layout/oneTree``).
        var rawFeedstorePutsOneTree: Double
        /// The same puts grouped as Feedstore's group commit groups them (as many rows a commit
        /// as there are writers), in each layout: rows per second and bytes written per row.
        var grouped: [(layout: RecordedPuts.Layout, rowsPerSecond: Double, bytesPerRow: Double)]
        /// The same puts grouped the same way, a tree each, committed to LMDB unsynced and made
        /// durable by a log of their own synced once a commit (``RecordedPuts/replayDurably(into:writers:layout:rowsPerCommit:logged:keepingSnapshot:)``):
        /// rows per second and bytes written per row (log, and LMDB's pages at the end).
        var logged: (rowsPerSecond: Double, bytesPerRow: Double)
        /// The same, with a reader keeping the snapshot the run starts from, as a commit log keeps
        /// its checkpoint's (``RecordedPuts/replayDurably(into:writers:layout:rowsPerCommit:logged:keepingSnapshot:)``):
        /// the floor of a commit log that can recover.
        var loggedKeepingSnapshot: (rowsPerSecond: Double, bytesPerRow: Double)
        /// The same in the layouts that share trees (``RecordedPuts/Layout/entityTreesShared``,
        /// ``RecordedPuts/Layout/oneTree``): the floor such a layout would give that log.
        var loggedKeepingSnapshotShared: [(layout: RecordedPuts.Layout, rowsPerSecond: Double, bytesPerRow: Double)]
        /// Feedstore keeping a commit log (``StoreOptions/keepsCommitLog``): commits per second
        /// and bytes written per row.
        var feedstoreLogged: (rowsPerSecond: Double, bytesPerRow: Double)
        /// Bytes written per row: Feedstore, GRDB, raw LMDB, raw LMDB with Feedstore's puts, and
        /// with them in one tree.
        var bytesPerRow: [Double]
        /// Mean pages of a one-row commit by tree (one writer only).
        var pages: [String: Double]?
        /// Commits per second by the shape of the calls: writers as tasks awaiting the async
        /// `write`, or as threads of their own calling the blocking `write`.
        var shapes: Shapes
    }

    struct Shapes {
        var loggedTasks: Double, loggedThreads: Double
        var syncedTasks: Double, syncedThreads: Double
        var grdbThreads: Double, grdbTasks: Double
    }

    func message(_ id: UInt64) -> Message {
        Message(id: id, folder: Int64(id % 8), date: Date(timeIntervalSinceReferenceDate: Double(id)), title: "message \(id)",
                isRead: false, contactId: id % 1_000)
    }

    /// Bytes this process has passed to write calls so far.
    static func bytesWritten() -> Double { Double(ProcessWrites.current.bytes) }

    func run(writers: Int) async throws -> Result {
        try? FileManager.default.removeItem(atPath: directory)
        let total = writers * commitsPerWriter
        var bytes: [Double] = []

        // Feedstore with a commit log ahead of LMDB (one sync a commit), in a store of its own.
        var loggedOptions = StoreOptions(durability: .full)
        loggedOptions.keepsCommitLog = true
        let loggedStore = try Store(path: directory + "/feedstore-logged", entities: DemoFeed.entities, options: loggedOptions)
        try Self.warmUp { id in try loggedStore.write { tx in try tx.insert(message(id)) } }
        try Self.warmUpPastCheckpoint(loggedStore) { id in try loggedStore.write { tx in try tx.insert(message(id)) } }
        // Async writers as tasks, then the same writers as threads calling the blocking `write`.
        let withLog = try await Self.inTurns(writers: writers, commitsPerWriter: commitsPerWriter, { firstID, perWriter in
            try await Self.commit(writers: writers, commitsPerWriter: perWriter, into: loggedStore) { message(firstID - 1 + $0) }
        }, { firstID, perWriter in
            try Self.commitOnThreads(writers: writers, commitsPerWriter: perWriter, into: loggedStore) { message(firstID - 1 + $0) }
        })
        loggedStore.close()

        let storePath = directory + "/feedstore"
        let store = try Store(path: storePath, entities: DemoFeed.entities, options: StoreOptions(durability: .full))
        try Self.warmUp { id in try store.write { tx in try tx.insert(message(id)) } }
        var asyncTransactions: UInt64 = 0
        let synced = try await Self.inTurns(writers: writers, commitsPerWriter: commitsPerWriter, { firstID, perWriter in
            let before = try Store.newestTransaction(at: storePath)
            try await Self.commit(writers: writers, commitsPerWriter: perWriter, into: store) { message(firstID - 1 + $0) }
            asyncTransactions += try Store.newestTransaction(at: storePath) - before
        }, { firstID, perWriter in
            try Self.commitOnThreads(writers: writers, commitsPerWriter: perWriter, into: store) { message(firstID - 1 + $0) }
        })
        let rowsPerCommit = Double(total) / Double(max(1, asyncTransactions))
        bytes.append(synced.first.bytes)
        var pages: [String: Double]?
        if writers == 1 {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("commit-pages.py").path
            var totals: [String: Double] = [:]
            for i in 0..<pageSamples {
                let m = message(UInt64(1 << 42) + UInt64(i))
                try await store.write { tx in try tx.insert(m) }
                for (tree, count) in try CommitPages.lastCommitPages(script: script, dataFile: storePath + "/data.mdb") {
                    totals[tree, default: 0] += Double(count) / Double(pageSamples)
                }
            }
            pages = totals
        }
        store.close()

        let pool = try GRDBPeer.open(directory + "/grdb.sqlite", durable: true)
        try Self.warmUp { id in try pool.write { db in try message(id).insert(db) } }
        // GRDB's blocking `write` from threads, then its async `write` from tasks.
        let grdb = try await Self.inTurns(writers: writers, commitsPerWriter: commitsPerWriter, { firstID, perWriter in
            try Self.concurrently(writers) { w in
                for c in 0..<perWriter {
                    let m = message(firstID + UInt64(w * perWriter + c))
                    try pool.write { db in try m.insert(db) }
                }
            }
        }, { firstID, perWriter in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for w in 0..<writers {
                    group.addTask {
                        for c in 0..<perWriter {
                            let m = message(firstID + UInt64(w * perWriter + c))
                            try await pool.write { db in try m.insert(db) }
                        }
                    }
                }
                try await group.waitForAll()
            }
        })
        try pool.close()
        bytes.append(grdb.first.bytes)

        // Raw LMDB: one put per synced commit (LMDB lets one writer in at a time).
        nonisolated(unsafe) let env = try RawLMDB.open(directory + "/raw", flags: 0)
        let dbi = try RawLMDB.database(env, "records")
        var written = Self.bytesWritten()
        let start = Date()
        try Self.concurrently(writers) { w in
            var value = [UInt8](repeating: 7, count: 60)
            for c in 0..<commitsPerWriter {
                var txn: OpaquePointer?
                try RawLMDB.check(mdb_txn_begin(env, nil, 0, &txn))
                try value.withUnsafeMutableBytes { try RawLMDB.put(txn, dbi, key: UInt64(w * commitsPerWriter + c + 1), value: $0) }
                try RawLMDB.check(mdb_txn_commit(txn))
            }
        }
        let raw = Double(total) / Date().timeIntervalSince(start)
        mdb_env_close(env)
        bytes.append((Self.bytesWritten() - written) / Double(total))

        // Raw LMDB with Feedstore's puts for each row (the journal keeps the newest 1,000
        // commits by default, so a long run replays its newest rows).
        let puts = try RecordedPuts(feedstorePath: storePath, everyRow: false, counts: true)
        written = Self.bytesWritten()
        let rawFeedstorePuts = try puts.replayDurably(into: directory + "/raw-puts", writers: writers)
        bytes.append((Self.bytesWritten() - written) / Double(puts.rows.count))
        written = Self.bytesWritten()
        let rawFeedstorePutsOneTree = try puts.replayDurably(into: directory + "/raw-puts-one-tree", writers: writers, layout: .oneTree)
        bytes.append((Self.bytesWritten() - written) / Double(puts.rows.count))
        var grouped: [(layout: RecordedPuts.Layout, rowsPerSecond: Double, bytesPerRow: Double)] = []
        for (i, layout) in RecordedPuts.Layout.allCases.enumerated() {
            written = Self.bytesWritten()
            let rate = try puts.replayDurably(into: directory + "/raw-puts-grouped-\(i)", writers: writers, layout: layout, rowsPerCommit: writers)
            grouped.append((layout, rate, (Self.bytesWritten() - written) / Double(puts.rows.count)))
        }
        written = Self.bytesWritten()
        let logged = try puts.replayDurably(into: directory + "/raw-puts-logged", writers: writers, rowsPerCommit: writers, logged: true)
        let loggedBytes = (Self.bytesWritten() - written) / Double(puts.rows.count)
        written = Self.bytesWritten()
        let loggedKept = try puts.replayDurably(into: directory + "/raw-puts-logged-kept", writers: writers, rowsPerCommit: writers, logged: true,
                                                keepingSnapshot: true)
        let loggedKeptBytes = (Self.bytesWritten() - written) / Double(puts.rows.count)
        var loggedKeptShared: [(layout: RecordedPuts.Layout, rowsPerSecond: Double, bytesPerRow: Double)] = []
        for layout in RecordedPuts.Layout.allCases where layout != .treeEach {
            written = Self.bytesWritten()
            let rate = try puts.replayDurably(into: directory + "/raw-puts-logged-kept-\(layout)", writers: writers, layout: layout, rowsPerCommit: writers,
                                              logged: true, keepingSnapshot: true)
            loggedKeptShared.append((layout, rate, (Self.bytesWritten() - written) / Double(puts.rows.count)))
        }
        try? FileManager.default.removeItem(atPath: directory)
        return Result(writers: writers, feedstore: synced.first.rate, rowsPerCommit: rowsPerCommit, grdb: grdb.first.rate, rawLMDB: raw, rawFeedstorePuts: rawFeedstorePuts, rawFeedstorePutsOneTree: rawFeedstorePutsOneTree, grouped: grouped,
                      logged: (logged, loggedBytes), loggedKeepingSnapshot: (loggedKept, loggedKeptBytes), loggedKeepingSnapshotShared: loggedKeptShared,
                      feedstoreLogged: (withLog.first.rate, withLog.first.bytes),
                      bytesPerRow: bytes, pages: pages,
                      shapes: Shapes(loggedTasks: withLog.first.rate, loggedThreads: withLog.second.rate, syncedTasks: synced.first.rate,
                                     syncedThreads: synced.second.rate, grdbThreads: grdb.first.rate, grdbTasks: grdb.second.rate))
    }

    /// Two shapes of writers on one store, taking turns: `rounds` rounds, each running `first`,
    /// then `second`, on an equal share of the commits (`perWriter` for each of `writers`, with
    /// ids from `firstID` on), so that what drifts during a run (the files and the free list
    /// growing, checkpoints, the machine's other work) weighs on both alike. Each one's commits
    /// per second and bytes written per commit.
    static func inTurns(writers: Int, commitsPerWriter: Int, rounds: Int = 4,
                        _ first: (_ firstID: UInt64, _ perWriter: Int) async throws -> Void,
                        _ second: (_ firstID: UInt64, _ perWriter: Int) async throws -> Void) async throws
        -> (first: (rate: Double, bytes: Double), second: (rate: Double, bytes: Double))
    {
        let rounds = max(1, min(rounds, commitsPerWriter))
        var seconds = [0.0, 0.0], bytes = [0.0, 0.0]
        var nextID: UInt64 = 1
        func measure(_ shape: Int, _ perWriter: Int, _ body: (_ firstID: UInt64, _ perWriter: Int) async throws -> Void) async throws {
            let (written, start) = (bytesWritten(), Date())
            try await body(nextID, perWriter)
            seconds[shape] += Date().timeIntervalSince(start)
            bytes[shape] += bytesWritten() - written
            nextID += UInt64(perWriter * writers)
        }
        for round in 0..<rounds {
            let perWriter = commitsPerWriter / rounds + (round < commitsPerWriter % rounds ? 1 : 0)
            try await measure(0, perWriter, first)
            try await measure(1, perWriter, second)
        }
        let total = Double(writers * commitsPerWriter)
        return ((total / seconds[0], bytes[0] / total), (total / seconds[1], bytes[1] / total))
    }

    /// `writers` tasks each inserting `commitsPerWriter` messages, one durable write each.
    static func commit(writers: Int, commitsPerWriter: Int, into store: Store, _ message: @escaping @Sendable (UInt64) -> Message) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                group.addTask {
                    for c in 0..<commitsPerWriter {
                        let m = message(UInt64(w * commitsPerWriter + c + 1))
                        try await store.write { tx in try tx.insert(m) }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Untimed durable commits into a new store before its timed ones, each writing one message
    /// with an id above theirs: the files grow to a working size first, so that the first of the
    /// shapes measured on a store does not pay alone for allocating them.
    static func warmUp(_ commit: (UInt64) throws -> Void) throws {
        for i in 0..<UInt64(300) { try commit((1 << 40) + i) }
    }

    /// Untimed durable commits into a store keeping a commit log until its first checkpoint
    /// after the one it opened with, ids above ``warmUp(_:)``'s: a checkpoint lets LMDB use
    /// again the pages freed since the one before, so only after it do commits find the free list
    /// they find for good, and every shape measured then pays for the checkpoints its commits
    /// bring on, not the first alone.
    static func warmUpPastCheckpoint(_ store: Store, _ commit: (UInt64) throws -> Void) throws {
        let opened = try store.inspect().commitLog?.checkpointTransaction
        var id = UInt64(1) << 41
        repeat {
            for _ in 0..<100 {
                try commit(id)
                id += 1
            }
        } while try store.inspect().commitLog?.checkpointTransaction == opened
    }

    /// `writers` threads each inserting `commitsPerWriter` messages through the blocking `write`
    /// (numbered from 1 on, `message` makes each).
    static func commitOnThreads(writers: Int, commitsPerWriter: Int, into store: Store, _ message: @escaping @Sendable (UInt64) -> Message) throws {
        try concurrently(writers) { w in
            for c in 0..<commitsPerWriter {
                let m = message(UInt64(w * commitsPerWriter + c + 1))
                try store.write { tx in try tx.insert(m) }
            }
        }
    }

    /// Runs `body` on `count` threads at once and waits for all; rethrows the first error.
    static func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
        let group = DispatchGroup()
        let failure = LockedBox<(any Error)?>(nil)
        for i in 0..<count {
            group.enter()
            Thread.detachNewThread {
                do { try body(i) } catch { failure.set(error) }
                group.leave()
            }
        }
        group.wait()
        if let error = failure.value { throw error }
    }
}

/// A value shared between threads.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.withLock { stored } }
    func set(_ value: T) { lock.withLock { stored = value } }
}
