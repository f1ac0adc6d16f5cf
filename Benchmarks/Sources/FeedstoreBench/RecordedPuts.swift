import CLMDBPeer
import Feedstore
import Foundation

/// The puts Feedstore made for a bulk insert of `BenchMessage`s, read back from its files: for
/// each row, in id order, its record, its two index entries and its journal entry, with the exact
/// keys and values. Replaying them with raw LMDB gives the physical limit of "the same puts":
/// what Feedstore writes beyond them (index counts, commit headers) and all its CPU work are
/// what the comparison measures.
struct RecordedPuts {
    /// Per row: (database, key, value) in the order Feedstore wrote them.
    private(set) var rows: [[(database: Int, key: [UInt8], value: [UInt8])]] = []
    static let databases = ["records:Message", "index:Message.byFolderDate", "index:Message.byContact", "feedstore.journal"]

    init(feedstorePath: String) throws {
        let env = try RawLMDB.open(feedstorePath, mapSize: 1 << 30, databases: 200, flags: MDB_RDONLY)
        defer { mdb_env_close(env) }
        var txn: OpaquePointer?
        try RawLMDB.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn))
        defer { mdb_txn_abort(txn) }
        let contents = try Self.databases.map { try Self.entries(of: $0, in: txn) }
        // The journal also holds one header per commit (its ordinal is all ones), which is not
        // one of a row's puts.
        let (records, journal) = (contents[0], contents[3].filter { !$0.key.suffix(4).allSatisfy { $0 == 0xFF } })
        guard records.count == journal.count else { throw LMDBError(code: MDB_CORRUPTED, operation: "one journal entry per record") }
        // An index key ends with the record's key (the encoded primary key).
        func byRecord(_ entries: [(key: [UInt8], value: [UInt8])]) -> [[UInt8]: [UInt8]] {
            Dictionary(uniqueKeysWithValues: entries.map { (Array($0.key.suffix(records[0].key.count)), $0.key) })
        }
        let indexes = [byRecord(contents[1]), byRecord(contents[2])]
        for (record, entry) in zip(records, journal) {
            var puts = [(0, record.key, record.value)]
            for (i, index) in indexes.enumerated() {
                guard let key = index[record.key] else { throw LMDBError(code: MDB_CORRUPTED, operation: "index entry of a record") }
                puts.append((i + 1, key, []))
            }
            puts.append((3, entry.key, entry.value))
            rows.append(puts)
        }
    }

    private static func entries(of name: String, in txn: OpaquePointer?) throws -> [(key: [UInt8], value: [UInt8])] {
        var dbi: MDB_dbi = 0
        try RawLMDB.check(mdb_dbi_open(txn, name, 0, &dbi), "open \(name)")
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

    /// Writes the rows into a new environment, `rowsPerTransaction` per transaction, appending
    /// where Feedstore appends (records and journal entries, whose keys ascend).
    func replay(into path: String, rowsPerTransaction: Int, sync: Bool) throws {
        let env = try RawLMDB.open(path, flags: sync ? 0 : MDB_NOSYNC)
        defer { mdb_env_close(env) }
        let dbis = try Self.databases.indices.map { try RawLMDB.database(env, "db\($0)") }
        var start = 0
        while start < rows.count {
            var txn: OpaquePointer?
            try RawLMDB.check(mdb_txn_begin(env, nil, 0, &txn))
            for row in rows[start..<min(rows.count, start + rowsPerTransaction)] {
                for (database, key, value) in row {
                    let flags = database == 0 || database == 3 ? MDB_APPEND : 0
                    try RawLMDB.put(txn, dbis[database], key: key, value: value, flags: UInt32(flags))
                }
            }
            try RawLMDB.check(mdb_txn_commit(txn))
            start += rowsPerTransaction
        }
        try RawLMDB.check(mdb_env_sync(env, 1))
    }
}
