import CLMDBPeer
import Feedstore
import Foundation
import GRDB

/// A message row with exactly two secondary indexes, as the bulk-insert target specifies.
struct BenchMessage: Entity {
    var id: UInt64
    var folder: Int64
    var date: Date
    var title: String
    var isRead: Bool
    var contactId: UInt64

    static let entityName = "Message"
    static let indexes: [IndexDefinition] = [
        IndexDefinition("byFolderDate", [.ascending("folder"), .descending("date")]),
        IndexDefinition("byContact", [.ascending("contactId")]),
    ]
}

extension BenchMessage: FetchableRecord, PersistableRecord {
    static var databaseTableName: String { "message" }
}

/// Bulk insert of `rows` records, `batch` per transaction: Feedstore (record, two indexes with
/// counts, journal) against raw LMDB doing the same number of puts (one per record, same key and
/// value sizes), raw LMDB doing the same physical puts Feedstore does, and GRDB inserting the
/// same records into a table with the same two indexes. Durable runs sync every commit
/// (Feedstore `.full`, LMDB's default, SQLite `synchronous = FULL`); the others do not
/// (Feedstore `.none`, `MDB_NOSYNC`, SQLite WAL with GRDB's default `synchronous = NORMAL`).
struct BulkInsert {
    let rows: Int
    let batch: Int
    let directory: String
    var durable = false
    /// Runs only Feedstore's part (for profiling).
    var feedstoreOnly = false

    struct Result {
        var feedstore: Double
        var rawSamePuts: Double
        var rawAllPuts: Double
        var rawExactPuts: Double
        var grdb: Double
    }

    func makeRows() -> [BenchMessage] {
        var rng = SplitMix(state: 42)
        let epoch = Date(timeIntervalSinceReferenceDate: 800_000_000)
        return (1...rows).map { i in
            BenchMessage(id: UInt64(i), folder: Int64.random(in: 0..<8, using: &rng),
                         date: epoch.addingTimeInterval(Double.random(in: 0..<50_000_000, using: &rng)),
                         title: "message number \(i)", isRead: Bool.random(using: &rng), contactId: UInt64.random(in: 1...1_000, using: &rng))
        }
    }

    func run() throws -> Result {
        let data = makeRows()
        let fm = FileManager.default
        try? fm.removeItem(atPath: directory)
        try fm.createDirectory(atPath: directory, withIntermediateDirectories: true)

        // Feedstore.
        let store = try Store(path: directory + "/feedstore", entities: [BenchMessage.self],
                              options: StoreOptions(durability: durable ? .full : .none, initialMapSize: 1 << 30))
        var start = Date()
        var i = 0
        while i < data.count {
            let chunk = data[i..<min(data.count, i + batch)]
            try store.write { tx in for row in chunk { try tx.insert(row) } }
            i += batch
        }
        try store.sync()
        let feedstore = Double(rows) / Date().timeIntervalSince(start)
        store.close()
        if feedstoreOnly { return Result(feedstore: feedstore, rawSamePuts: .nan, rawAllPuts: .nan, rawExactPuts: .nan, grdb: .nan) }

        // Raw LMDB replaying exactly the puts Feedstore made for each row, read back from its files.
        let recorded = try RecordedPuts(feedstorePath: directory + "/feedstore")
        start = Date()
        try recorded.replay(into: directory + "/raw-exact", rowsPerTransaction: batch, sync: durable)
        let rawExact = Double(rows) / Date().timeIntervalSince(start)

        // Raw LMDB: one put per record, keys and values sized like Feedstore's record.
        let recordSize = 60
        start = Date()
        try rawPuts(path: directory + "/raw-same", databases: 1, putsPerRow: 1, valueSize: recordSize)
        let rawSame = Double(rows) / Date().timeIntervalSince(start)

        // Raw LMDB: as many puts as Feedstore's write makes (record + 2 index entries + journal
        // entry), with 8-byte random index keys and fixed-size values.
        start = Date()
        try rawPuts(path: directory + "/raw-all", databases: 4, putsPerRow: 4, valueSize: recordSize)
        let rawAll = Double(rows) / Date().timeIntervalSince(start)

        // GRDB: the same records, the same two indexes.
        let pool = try GRDBPeer.open(directory + "/grdb.sqlite", durable: durable, unreadIndex: false)
        start = Date()
        i = 0
        while i < data.count {
            let chunk = data[i..<min(data.count, i + batch)]
            try pool.write { db in for row in chunk { try row.insert(db) } }
            i += batch
        }
        let grdb = Double(rows) / Date().timeIntervalSince(start)
        try pool.close()
        try? fm.removeItem(atPath: directory)
        return Result(feedstore: feedstore, rawSamePuts: rawSame, rawAllPuts: rawAll, rawExactPuts: rawExact, grdb: grdb)
    }

    /// Random-order keys (like index keys) into `databases` databases, `putsPerRow` per row.
    private func rawPuts(path: String, databases: Int, putsPerRow: Int, valueSize: Int) throws {
        let env = try RawLMDB.open(path, flags: durable ? 0 : MDB_NOSYNC)
        defer { mdb_env_close(env) }
        let dbis = try (0..<databases).map { try RawLMDB.database(env, "db\($0)") }
        var txn: OpaquePointer?
        var value = [UInt8](repeating: 7, count: valueSize)
        var rng = SplitMix(state: 7)
        var row = 0
        while row < rows {
            try RawLMDB.check(mdb_txn_begin(env, nil, 0, &txn))
            for r in row..<min(rows, row + batch) {
                for p in 0..<putsPerRow {
                    // The record key is the sequential id; index keys are random, as index keys are.
                    let isRecord = p == 0 || p == putsPerRow - 1
                    try value.withUnsafeMutableBytes { bytes in
                        try RawLMDB.put(txn, dbis[p % databases], key: isRecord ? UInt64(r + 1) : rng.next(),
                                        value: UnsafeMutableRawBufferPointer(rebasing: bytes[0..<(isRecord ? valueSize : 0)]))
                    }
                }
            }
            try RawLMDB.check(mdb_txn_commit(txn))
            row += batch
        }
        try RawLMDB.check(mdb_env_sync(env, 1))
    }
}

/// A fast seeded generator, so generating the data costs little and is the same every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
