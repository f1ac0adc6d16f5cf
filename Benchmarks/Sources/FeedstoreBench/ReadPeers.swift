import CLMDBPeer
import Feedstore
import DemoFeed
import Foundation
import GRDB

/// Reads over the demo feed's `byFolderDate` order at one size: Feedstore's positional reads
/// against the same physical reads done with raw LMDB cursors on Feedstore's own files (the
/// floor: no decoding, no counts), and against GRDB's SQL for the same answers.
struct ReadPeers {
    let size: Int
    let directory: String
    let operations = 20_000

    struct Row {
        var operation: String
        var feedstore: Double
        var rawLMDB: Double?
        var grdb: Double?
    }

    /// Operations per second of `body`, run `count` times after an untimed round of the same
    /// operations: each peer opens its files afresh for a pass, and the first touch of a freshly
    /// mapped page costs a fault, which would otherwise fall on whichever operation reads first.
    func rate(_ count: Int, _ body: (Int) throws -> Void) rethrows -> Double {
        for i in 0..<count { try body(i) }
        let start = Timing.now
        for i in 0..<count { try body(i) }
        return Double(count) / (Double(Timing.now - start) / 1e9)
    }

    func run() throws -> [Row] {
        try? FileManager.default.removeItem(atPath: directory)
        let path = directory + "/feedstore"
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none, initialMapSize: 1 << 30))
        var feed = DemoFeed(seed: 1)
        try feed.populate(store, messages: size, contacts: 1_000, batch: 5_000)
        var rng = SplitMix(state: 9)
        let positions = (0..<operations).map { _ in Int.random(in: 0..<(size - 100), using: &rng) }
        let ids = (0..<operations).map { _ in UInt64.random(in: 1...UInt64(size), using: &rng) }
        // The index keys at those positions, for the raw peer's seeks.
        let keys = try store.read { tx in try positions.map { try tx.indexKey(entity: "Message", index: "byFolderDate", at: $0)!.bytes } }

        var rows: [Row] = []
        let pool = try GRDBPeer.open(directory + "/grdb.sqlite", durable: false)
        try GRDBPeer.copyMessages(from: store, to: pool)
        store.close()
        let ordered = Message.order(Column("folder"), Column("date").desc)
        let grdbAt = try pool.read { db in try rate(200) { blackHole(try ordered.limit(1, offset: positions[$0]).fetchOne(db)) } }
        let grdbPosition = try pool.read { db in
            try rate(200) { i in
                guard let m = try Message.fetchOne(db, key: ids[i]) else { return }
                // Rows before it in (folder, date DESC) order, ties by id.
                blackHole(try ordered.filter(Column("folder") < m.folder
                    || (Column("folder") == m.folder && (Column("date") > m.date || (Column("date") == m.date && Column("id") < m.id)))).fetchCount(db))
            }
        }
        let grdbCount = try pool.read { db in try rate(200) { blackHole(try GRDBPeer.folderRequest(Int64($0 % 8)).fetchCount(db)) } }
        let grdbWindow = try pool.read { db in try rate(200) { blackHole(try ordered.limit(100, offset: positions[$0]).fetchAll(db)) } }
        _ = try pool.read { db in try GRDBPeer.folderRequest(1).fetchAll(db) }
        let grdbScan = try median((0..<3).map { _ in
            let start = Timing.now
            let scanned = try pool.read { db in try GRDBPeer.folderRequest(1).fetchAll(db) }.count
            return Double(scanned) / (Double(Timing.now - start) / 1e9)
        })
        try pool.close()

        // Feedstore and raw LMDB (the same pages of Feedstore's files, no Feedstore logic) take
        // turns, five times each, and each keeps its medians: on a shared machine one pass can
        // land on a slow moment.
        var feedstoreRuns: [FeedstoreReads] = []
        var rawRuns: [(lookup: Double, count: Double, window: Double, scan: Double)] = []
        for _ in 0..<5 {
            feedstoreRuns.append(try feedstoreReads(path: path, positions: positions, ids: ids))
            rawRuns.append(try rawReads(path: path, keys: keys))
        }
        let objectAt = median(feedstoreRuns.map(\.objectAt)), position = median(feedstoreRuns.map(\.position))
        let count = median(feedstoreRuns.map(\.count)), window = median(feedstoreRuns.map(\.window))
        let scan = median(feedstoreRuns.map(\.scan))
        let raw = (lookup: median(rawRuns.map(\.lookup)), count: median(rawRuns.map(\.count)),
                   window: median(rawRuns.map(\.window)), scan: median(rawRuns.map(\.scan)))
        rows.append(Row(operation: "record at a random position (`object(at:)`; raw: seek to a known key + get)", feedstore: objectAt,
                        rawLMDB: raw.lookup, grdb: grdbAt))
        rows.append(Row(operation: "position of a random record (`position(of:)`)", feedstore: position, rawLMDB: nil, grdb: grdbPosition))
        rows.append(Row(operation: "count of a folder (raw: walk its entries)", feedstore: count, rawLMDB: raw.count, grdb: grdbCount))
        rows.append(Row(operation: "100-row window at a random position (raw: seek + 100 entries and records)", feedstore: window,
                        rawLMDB: raw.window, grdb: grdbWindow))
        rows.append(Row(operation: "full scan of a folder, rows/s", feedstore: scan, rawLMDB: raw.scan, grdb: grdbScan))
        // The same reads of the same records into a type without `StoredFieldsDecodable`.
        rows.append(Row(operation: "record at a random position, through `Codable`", feedstore: median(feedstoreRuns.map(\.codableObjectAt)),
                        rawLMDB: raw.lookup, grdb: grdbAt))
        rows.append(Row(operation: "100-row window at a random position, through `Codable`", feedstore: median(feedstoreRuns.map(\.codableWindow)),
                        rawLMDB: raw.window, grdb: grdbWindow))
        rows.append(Row(operation: "full scan of a folder, rows/s, through `Codable`", feedstore: median(feedstoreRuns.map(\.codableScan)),
                        rawLMDB: raw.scan, grdb: grdbScan))
        try? FileManager.default.removeItem(atPath: directory)
        return rows
    }

    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

    struct FeedstoreReads {
        var objectAt, position, count, window, scan: Double
        /// The same reads into ``CodableMessage``, which decodes through `Codable`.
        var codableObjectAt, codableWindow, codableScan: Double
    }

    /// Feedstore's reads, each a rate, on the store at `path` opened for this pass.
    private func feedstoreReads(path: String, positions: [Int], ids: [UInt64]) throws -> FeedstoreReads {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none, initialMapSize: 1 << 30))
        defer { store.close() }
        let everything = Query(Message.self, index: "byFolderDate")
        let folder = everything.narrowed(to: [.int(1)])
        let objectAt = try store.read { tx in try rate(operations) { blackHole(try tx.object(at: positions[$0], in: everything)) } }
        let position = try store.read { tx in try rate(operations) { blackHole(try tx.position(of: ids[$0], in: everything)) } }
        let count = try store.read { tx in try rate(operations) { blackHole(try tx.count(everything.narrowed(to: [.int(Int64($0 % 8))]))) } }
        let window = try store.read { tx in try rate(2_000) { blackHole(try tx.objects(in: everything, offset: positions[$0], limit: 100)) } }
        let scan = try scanRate { try store.read { try $0.objects(in: folder) }.count }
        let codable = Query(CodableMessage.self, index: "byFolderDate")
        let codableObjectAt = try store.read { tx in try rate(operations) { blackHole(try tx.object(at: positions[$0], in: codable)) } }
        let codableWindow = try store.read { tx in try rate(2_000) { blackHole(try tx.objects(in: codable, offset: positions[$0], limit: 100)) } }
        let codableScan = try scanRate { try store.read { try $0.objects(in: codable.narrowed(to: [.int(1)])) }.count }
        return FeedstoreReads(objectAt: objectAt, position: position, count: count, window: window, scan: scan,
                              codableObjectAt: codableObjectAt, codableWindow: codableWindow, codableScan: codableScan)
    }

    /// Rows per second of a scan that returns how many rows it read, after an untimed scan.
    private func scanRate(_ scan: () throws -> Int) rethrows -> Double {
        _ = try scan()
        let start = Timing.now
        let scanned = try scan()
        return Double(scanned) / (Double(Timing.now - start) / 1e9)
    }

    /// Raw cursor work on Feedstore's index and record databases.
    private func rawReads(path: String, keys: [[UInt8]]) throws -> (lookup: Double, count: Double, window: Double, scan: Double) {
        let env = try RawLMDB.open(path, mapSize: 1 << 30, databases: 200, flags: MDB_RDONLY)
        defer { mdb_env_close(env) }
        var txn: OpaquePointer?
        try RawLMDB.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn))
        defer { mdb_txn_abort(txn) }
        var index: MDB_dbi = 0, records: MDB_dbi = 0
        try RawLMDB.check(mdb_dbi_open(txn, "index:Message.byFolderDate", 0, &index))
        try RawLMDB.check(mdb_dbi_open(txn, "records:Message", 0, &records))
        var cursor: OpaquePointer?
        try RawLMDB.check(mdb_cursor_open(txn, index, &cursor))
        defer { mdb_cursor_close(cursor) }
        // An index key ends with the encoded primary key (a tag and 8 bytes for UInt64 ids).
        func record(_ key: MDB_val) -> Int {
            var k = MDB_val(mv_size: 9, mv_data: key.mv_data + key.mv_size - 9)
            var v = MDB_val()
            return mdb_get(txn, records, &k, &v) == 0 ? v.mv_size : -1
        }
        func seek(_ bytes: [UInt8], _ op: MDB_cursor_op) -> MDB_val? {
            var bytes = bytes
            return bytes.withUnsafeMutableBytes { b in
                var k = MDB_val(mv_size: b.count, mv_data: b.baseAddress)
                var v = MDB_val()
                return mdb_cursor_get(cursor, &k, &v, op) == 0 ? k : nil
            }
        }
        func next() -> MDB_val? {
            var k = MDB_val(), v = MDB_val()
            return mdb_cursor_get(cursor, &k, &v, MDB_NEXT) == 0 ? k : nil
        }
        let lookup = try rate(keys.count) { i in
            guard let k = seek(keys[i], MDB_SET_KEY), record(k) > 0 else { throw LMDBError(code: MDB_NOTFOUND, operation: "raw lookup") }
        }
        let window = rate(2_000) { i in
            guard var k = seek(keys[i], MDB_SET_KEY) else { return }
            var n = 0
            while n < 100 {
                blackHole(record(k))
                n += 1
                guard let following = next() else { break }
                k = following
            }
        }
        // A folder's entries start with its encoded number; walking them counts them.
        let folderStart = try folderPrefix(keys: keys, folder: 1)
        func walkFolder(_ visit: (MDB_val) -> Void) {
            guard var k = seek(folderStart, MDB_SET_RANGE) else { return }
            while k.mv_size >= folderStart.count, memcmp(k.mv_data, folderStart, folderStart.count) == 0 {
                visit(k)
                guard let following = next() else { break }
                k = following
            }
        }
        let count = rate(20) { _ in
            var n = 0
            walkFolder { _ in n += 1 }
            blackHole(n)
        }
        walkFolder { k in blackHole(record(k)) }
        var scanned = 0
        let scanStart = Timing.now
        walkFolder { k in
            blackHole(record(k))
            scanned += 1
        }
        let scan = Double(scanned) / (Double(Timing.now - scanStart) / 1e9)
        return (lookup, count, window, scan)
    }

    /// The encoded prefix of folder `folder`'s entries: the shortest prefix of one of its sampled
    /// keys that decodes as exactly one component.
    private func folderPrefix(keys: [[UInt8]], folder: Int64) throws -> [UInt8] {
        for key in keys where try IndexKey(bytes: key).components().first == .int(folder) {
            for length in 1...key.count {
                let prefix = Array(key.prefix(length))
                if let components = try? IndexKey(bytes: prefix).components(), components.count == 1 { return prefix }
            }
        }
        throw LMDBError(code: MDB_NOTFOUND, operation: "no sampled key in folder \(folder)")
    }
}
