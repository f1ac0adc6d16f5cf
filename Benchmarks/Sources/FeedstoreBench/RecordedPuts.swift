import CLMDBPeer
import Feedstore
import Foundation

/// The puts Feedstore made for rows of `Message`, read back from its files: for each row, in id
/// order, its record, its entry in each index, its journal entry, and (when asked) one write of
/// each index's counts tree, with the exact keys and values. Replaying them with raw LMDB gives
/// the physical limit of "the same puts": what Feedstore writes beyond them (index counts unless
/// replayed, commit headers) and all its CPU work are what the comparison measures.
struct RecordedPuts {
    /// Per row: (database, key, value) in the order Feedstore wrote them.
    private(set) var rows: [[(database: Int, key: [UInt8], value: [UInt8])]] = []
    /// The store's older rows, whose journal entries retention trimmed (``init(feedstorePath:everyRow:counts:)``
    /// without `everyRow`): their records and index entries, which a replay writes first,
    /// untimed, so that its trees are as large as the store's when the timed rows go in.
    private(set) var earlierRows: [[(database: Int, key: [UInt8], value: [UInt8])]] = []
    /// The trees the puts go to: the records, each index, the journal, then each counts tree.
    private(set) var databases: [String] = []
    /// The trees whose keys ascend with the rows (the records and the journal), appended to.
    private(set) var appended: Set<Int> = []

    /// - Parameters:
    ///   - everyRow: whether every record must have its journal entry. Without it, a store whose
    ///     journal retention trimmed its older commits gives its newest records, paired with the
    ///     entries the journal still holds.
    ///   - counts: whether each row also rewrites each index's counts tree (its root entry, as
    ///     the store holds it): the page a small store's commit writes in each.
    init(feedstorePath: String, everyRow: Bool = true, counts: Bool = false) throws {
        let env = try RawLMDB.open(feedstorePath, mapSize: 1 << 30, databases: 200, flags: MDB_RDONLY)
        defer { mdb_env_close(env) }
        var txn: OpaquePointer?
        try RawLMDB.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn))
        defer { mdb_txn_abort(txn) }
        let names = try Self.entries(of: nil, in: txn).map { String(decoding: $0.key, as: UTF8.self) }
        let indexes = names.filter { $0.hasPrefix("index:Message.") }.sorted()
        let countTrees = counts ? names.filter { $0.hasPrefix("counts:Message.") }.sorted() : []
        databases = ["records:Message"] + indexes + ["feedstore.journal"] + countTrees
        let journalTree = indexes.count + 1
        appended = [0, journalTree]
        let contents = try databases.map { try Self.entries(of: $0, in: txn) }
        // The journal also holds one header per commit (its ordinal is all ones), which is not
        // one of a row's puts.
        var (records, journal) = (contents[0], contents[journalTree].filter { !$0.key.suffix(4).allSatisfy { $0 == 0xFF } })
        var earlier: ArraySlice<(key: [UInt8], value: [UInt8])> = []
        if !everyRow, journal.count < records.count {
            earlier = records.prefix(records.count - journal.count)
            records = Array(records.suffix(journal.count))
        }
        guard records.count == journal.count else { throw LMDBError(code: MDB_CORRUPTED, operation: "one journal entry per record") }
        // An index key ends with the record's key (the encoded primary key).
        func byRecord(_ entries: [(key: [UInt8], value: [UInt8])]) -> [[UInt8]: [UInt8]] {
            Dictionary(entries.map { (Array($0.key.suffix(records[0].key.count)), $0.key) }, uniquingKeysWith: { a, _ in a })
        }
        let indexEntries = contents[1...indexes.count].map(byRecord)
        /// A row's record and its entry in each index.
        func recordAndEntries(_ record: (key: [UInt8], value: [UInt8])) -> [(database: Int, key: [UInt8], value: [UInt8])] {
            var puts = [(0, record.key, record.value)]
            for (i, index) in indexEntries.enumerated() {
                // A partial index holds only the records its condition admits.
                guard let key = index[record.key] else { continue }
                puts.append((i + 1, key, []))
            }
            return puts
        }
        earlierRows = earlier.map(recordAndEntries)
        let roots = contents[(journalTree + 1)...].map { $0.first! }
        for (record, entry) in zip(records, journal) {
            var puts = recordAndEntries(record)
            puts.append((journalTree, entry.key, entry.value))
            for (i, root) in roots.enumerated() { puts.append((journalTree + 1 + i, root.key, root.value)) }
            rows.append(puts)
        }
    }

    /// The entries of the named database `name`, or of LMDB's catalog of them when nil.
    private static func entries(of name: String?, in txn: OpaquePointer?) throws -> [(key: [UInt8], value: [UInt8])] {
        var dbi: MDB_dbi = 0
        try RawLMDB.check(mdb_dbi_open(txn, name, 0, &dbi), "open \(name ?? "the catalog")")
        var cursor: OpaquePointer?
        try RawLMDB.check(mdb_cursor_open(txn, dbi, &cursor))
        defer { mdb_cursor_close(cursor) }
        var entries: [(key: [UInt8], value: [UInt8])] = []
        var k = MDB_val(), v = MDB_val()
        var op = MDB_FIRST
        while mdb_cursor_get(cursor, &k, &v, op) == 0 {
            entries.append((Array(UnsafeRawBufferPointer(start: k.mv_data, count: k.mv_size)),
                            Array(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))))
            op = MDB_NEXT
        }
        return entries
    }

    /// Where a replay keeps Feedstore's trees: the floors of layouts whose trees share pages
    /// (one branch path, one entry in LMDB's catalog, shared leaves for small trees).
    enum Layout: CaseIterable {
        /// A tree each, as Feedstore keeps them.
        case treeEach
        /// The records, index entries and counts in one tree, each key behind a byte naming the
        /// tree it came from; the journal in a tree of its own.
        case entityTreesShared
        /// Every key in one tree, behind a byte naming the tree it came from.
        case oneTree
    }

    /// The rows replayed into a new environment in synced commits; returns the rows per second.
    /// - Parameters:
    ///   - writers: threads committing one row at a time (LMDB lets one writer in at a time),
    ///     when `rowsPerCommit` is 1.
    ///   - rowsPerCommit: rows a commit holds, as Feedstore's group commit holds one row per
    ///     waiting writer; committed by one thread, as Feedstore's writer thread commits them.
    ///   - logged: LMDB commits without syncing, and each commit is made durable by appending its
    ///     puts to a log of its own (a file written ahead, so appends overwrite blocks already
    ///     allocated) and syncing the log once; LMDB's file is synced once at the end, inside the
    ///     timing, as a checkpoint would. The floor of a commit log ahead of LMDB, with one sync
    ///     a commit where LMDB's own commit makes two.
    ///   - keepingSnapshot: with `logged`, a reader holds the snapshot the run starts from until
    ///     LMDB's file is synced at the end, as a commit log must keep its checkpoint's pages to
    ///     replay onto after a crash: LMDB then uses no page freed during the run again, and
    ///     each commit writes new pages, as Feedstore's commit log does between checkpoints.
    ///     The floor of a commit log ahead of LMDB that can recover.
    func replayDurably(into path: String, writers: Int, layout: Layout = .treeEach, rowsPerCommit: Int = 1, logged: Bool = false,
                       keepingSnapshot: Bool = false) throws -> Double {
        nonisolated(unsafe) let env = try RawLMDB.open(path, flags: logged ? MDB_NOSYNC : 0)
        defer { mdb_env_close(env) }
        let log = logged ? try WrittenAheadLog(path: path + "/commits.log", bytes: rows.reduce(0) { $0 + $1.reduce(16) { $0 + $1.key.count + $1.value.count + 8 } }) : nil
        let dbis: [MDB_dbi]
        var (rows, earlierRows) = (self.rows, self.earlierRows)
        func prefixed(_ shared: (Int) -> Bool) {
            func prefix(_ rows: [[(database: Int, key: [UInt8], value: [UInt8])]]) -> [[(database: Int, key: [UInt8], value: [UInt8])]] {
                rows.map { $0.map { put in shared(put.database) ? (put.database, [UInt8(put.database)] + put.key, put.value) : put } }
            }
            (rows, earlierRows) = (prefix(rows), prefix(earlierRows))
        }
        switch layout {
        case .treeEach:
            dbis = try databases.indices.map { try RawLMDB.database(env, "db\($0)") }
        case .entityTreesShared:
            let (entity, journal) = (try RawLMDB.database(env, "entity"), try RawLMDB.database(env, "journal"))
            dbis = databases.map { $0 == "feedstore.journal" ? journal : entity }
            prefixed { databases[$0] != "feedstore.journal" }
        case .oneTree:
            dbis = Array(repeating: try RawLMDB.database(env, "all"), count: databases.count)
            prefixed { _ in true }
        }
        // The store's older rows first, untimed and made durable, as the store held them when
        // the timed rows were written.
        try Self.write(earlierRows, into: env, dbis, rowsPerTransaction: 10_000)
        let groups = stride(from: 0, to: rows.count, by: rowsPerCommit).map { Array(rows[$0..<min(rows.count, $0 + rowsPerCommit)]) }
        let threads = rowsPerCommit == 1 ? writers : 1
        // The snapshot a checkpoint would keep: LMDB reuses no page freed after a reader's snapshot.
        var kept: OpaquePointer?
        if keepingSnapshot { try RawLMDB.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &kept)) }
        defer { if let kept { mdb_txn_abort(kept) } }
        let start = Date()
        try DurableCommits.concurrently(threads) { w in
            for group in stride(from: w, to: groups.count, by: threads).map({ groups[$0] }) {
                var txn: OpaquePointer?
                try RawLMDB.check(mdb_txn_begin(env, nil, 0, &txn))
                for row in group {
                    for (database, key, value) in row { try RawLMDB.put(txn, dbis[database], key: key, value: value) }
                }
                try log?.append(group)
                try RawLMDB.check(mdb_txn_commit(txn))
                try log?.sync()
            }
        }
        if logged { try RawLMDB.check(mdb_env_sync(env, 1)) }
        return Double(rows.count) / Date().timeIntervalSince(start)
    }

    /// Writes the rows into a new environment, `rowsPerTransaction` per transaction, appending
    /// where Feedstore appends (records and journal entries, whose keys ascend).
    func replay(into path: String, rowsPerTransaction: Int, sync: Bool) throws {
        let env = try RawLMDB.open(path, flags: sync ? 0 : MDB_NOSYNC)
        defer { mdb_env_close(env) }
        let dbis = try databases.indices.map { try RawLMDB.database(env, "db\($0)") }
        try Self.write(rows, into: env, dbis, rowsPerTransaction: rowsPerTransaction, appended: appended)
    }

    /// Puts `rows` into `env`, `rowsPerTransaction` a transaction (appending to the trees in
    /// `appended`, whose keys ascend), then syncs it.
    private static func write(_ rows: [[(database: Int, key: [UInt8], value: [UInt8])]], into env: OpaquePointer?, _ dbis: [MDB_dbi],
                              rowsPerTransaction: Int, appended: Set<Int> = []) throws {
        guard !rows.isEmpty else { return }
        for start in stride(from: 0, to: rows.count, by: rowsPerTransaction) {
            var txn: OpaquePointer?
            try RawLMDB.check(mdb_txn_begin(env, nil, 0, &txn))
            for row in rows[start..<min(rows.count, start + rowsPerTransaction)] {
                for (database, key, value) in row {
                    try RawLMDB.put(txn, dbis[database], key: key, value: value, flags: UInt32(appended.contains(database) ? MDB_APPEND : 0))
                }
            }
            try RawLMDB.check(mdb_txn_commit(txn))
        }
        try RawLMDB.check(mdb_env_sync(env, 1))
    }
}

/// A log file written ahead to its full size, then appended to: each commit's puts (tree, key,
/// value, with their lengths) at the end, synced with `fdatasync`, which then flushes data alone
/// (the blocks are allocated already, so no file-size change goes through the file system's
/// journal).
final class WrittenAheadLog: @unchecked Sendable {
    private let descriptor: Int32
    private var offset = 0
    private let lock = NSLock()

    init(path: String, bytes: Int) throws {
        descriptor = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw LMDBError(code: errno, operation: "open \(path)") }
        let chunk = [UInt8](repeating: 0, count: 1 << 20)
        var written = 0
        while written < bytes {
            guard pwrite(descriptor, chunk, chunk.count, off_t(written)) == chunk.count else { throw LMDBError(code: errno, operation: "write \(path)") }
            written += chunk.count
        }
        guard fsync(descriptor) == 0 else { throw LMDBError(code: errno, operation: "fsync \(path)") }
    }

    deinit { close(descriptor) }

    func append(_ rows: [[(database: Int, key: [UInt8], value: [UInt8])]]) throws {
        var record: [UInt8] = []
        func length(_ n: Int) { withUnsafeBytes(of: UInt32(n).littleEndian) { record += $0 } }
        for row in rows {
            for (database, key, value) in row {
                record.append(UInt8(database))
                length(key.count)
                record += key
                length(value.count)
                record += value
            }
        }
        try lock.withLock {
            guard pwrite(descriptor, record, record.count, off_t(offset)) == record.count else { throw LMDBError(code: errno, operation: "write the log") }
            offset += record.count
        }
    }

    func sync() throws {
        guard fdatasync(descriptor) == 0 else { throw LMDBError(code: errno, operation: "fdatasync the log") }
    }
}
