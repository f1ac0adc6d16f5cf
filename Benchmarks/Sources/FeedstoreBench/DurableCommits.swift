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
        var written = Self.bytesWritten()
        var start = Date()
        try await Self.commit(writers: writers, commitsPerWriter: commitsPerWriter, into: loggedStore, { message($0) })
        let feedstoreLogged = Double(total) / Date().timeIntervalSince(start)
        let feedstoreLoggedBytes = (Self.bytesWritten() - written) / Double(total)
        // The same writers as threads calling the blocking `write` (new ids after the first ones).
        let loggedThreads = try Self.commitOnThreads(writers: writers, commitsPerWriter: commitsPerWriter, into: loggedStore) { message(UInt64(total) + $0) }
        loggedStore.close()

        let storePath = directory + "/feedstore"
        let store = try Store(path: storePath, entities: DemoFeed.entities, options: StoreOptions(durability: .full))
        try Self.warmUp { id in try store.write { tx in try tx.insert(message(id)) } }
        let commitsBefore = try Store.newestTransaction(at: storePath)
        written = Self.bytesWritten()
        start = Date()
        try await Self.commit(writers: writers, commitsPerWriter: commitsPerWriter, into: store, { message($0) })
        let feedstore = Double(total) / Date().timeIntervalSince(start)
        let rowsPerCommit = Double(total) / Double(max(1, try Store.newestTransaction(at: storePath) - commitsBefore))
        bytes.append((Self.bytesWritten() - written) / Double(total))
        let syncedThreads = try Self.commitOnThreads(writers: writers, commitsPerWriter: commitsPerWriter, into: store) { message(UInt64(total) + $0) }
        var pages: [String: Double]?
        if writers == 1 {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("commit-pages.py").path
            var totals: [String: Double] = [:]
            for i in 0..<pageSamples {
                let m = message(UInt64(2 * total + i + 1))
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
        written = Self.bytesWritten()
        start = Date()
        try Self.concurrently(writers) { w in
            for c in 0..<commitsPerWriter {
                let m = message(UInt64(w * commitsPerWriter + c + 1))
                try pool.write { db in try m.insert(db) }
            }
        }
        let grdb = Double(total) / Date().timeIntervalSince(start)
        // GRDB's async `write`, from tasks.
        start = Date()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<writers {
                group.addTask {
                    for c in 0..<commitsPerWriter {
                        let m = message(UInt64(total + w * commitsPerWriter + c + 1))
                        try await pool.write { db in try m.insert(db) }
                    }
                }
            }
            try await group.waitForAll()
        }
        let grdbTasks = Double(total) / Date().timeIntervalSince(start)
        try pool.close()
        bytes.append((Self.bytesWritten() - written) / Double(total))

        // Raw LMDB: one put per synced commit (LMDB lets one writer in at a time).
        nonisolated(unsafe) let env = try RawLMDB.open(directory + "/raw", flags: 0)
        let dbi = try RawLMDB.database(env, "records")
        written = Self.bytesWritten()
        start = Date()
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
        try? FileManager.default.removeItem(atPath: directory)
        return Result(writers: writers, feedstore: feedstore, rowsPerCommit: rowsPerCommit, grdb: grdb, rawLMDB: raw, rawFeedstorePuts: rawFeedstorePuts, rawFeedstorePutsOneTree: rawFeedstorePutsOneTree, grouped: grouped,
                      logged: (logged, loggedBytes), loggedKeepingSnapshot: (loggedKept, loggedKeptBytes), feedstoreLogged: (feedstoreLogged, feedstoreLoggedBytes),
                      bytesPerRow: bytes, pages: pages,
                      shapes: Shapes(loggedTasks: feedstoreLogged, loggedThreads: loggedThreads, syncedTasks: feedstore, syncedThreads: syncedThreads,
                                     grdbThreads: grdb, grdbTasks: grdbTasks))
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

    /// `writers` threads each inserting `commitsPerWriter` messages through the blocking `write`
    /// (numbered from 1 on, `message` makes each); commits per second.
    static func commitOnThreads(writers: Int, commitsPerWriter: Int, into store: Store, _ message: @escaping @Sendable (UInt64) -> Message) throws -> Double {
        let start = Date()
        try concurrently(writers) { w in
            for c in 0..<commitsPerWriter {
                let m = message(UInt64(w * commitsPerWriter + c + 1))
                try store.write { tx in try tx.insert(m) }
            }
        }
        return Double(writers * commitsPerWriter) / Date().timeIntervalSince(start)
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
