import CLMDBPeer
@_spi(Benchmarking) import Feedstore
import Foundation

/// One record with one secondary index on a random key: what the counting benchmark writes.
struct Sample: Entity {
    var id: UInt64
    var key: Int64
    static let byKey = index("byKey", \.key)
    static let indexes = [byKey.definition]
}

/// Order statistics at several sizes: rank, entry(at:) and count(range) per second, and bulk
/// insert with counting against insert without it and against raw LMDB puts, in the same run.
struct CountedIndexBench {
    let sizes: [Int]
    let directory: String
    let operations = 100_000

    struct Row {
        var size: Int
        var rankPerSecond: Double
        var entryPerSecond: Double
        var countPerSecond: Double
        var insertCounted: Double
        var insertUncounted: Double?
        var insertRaw: Double
        /// Raw LMDB random cursor seeks per second on an index of the same size: the floor of any lookup.
        var rawSeekPerSecond: Double
        var height: Int
    }

    /// The records of a run at `size`, with the generator that made them (lookups continue it).
    static func samples(_ size: Int) -> (samples: [Sample], rng: SplitMix) {
        var rng = SplitMix(state: UInt64(size))
        return ((1...size).map { Sample(id: UInt64($0), key: Int64.random(in: .min ... .max, using: &rng)) }, rng)
    }

    func run(uncountedUpTo: Int) throws -> [Row] {
        var rows: [Row] = []
        for size in sizes {
            var (samples, rng) = Self.samples(size)
            let counted = try Self.insert(samples, counting: true, path: directory + "/counted-\(size)")
            let uncounted = size <= uncountedUpTo ? try Self.insert(samples, counting: false, path: directory + "/uncounted-\(size)").rate : nil
            let raw = try rawInsert(samples, path: directory + "/raw-\(size)", rng: &rng)
            let reads = try measureReads(store: counted.store, size: size, rng: &rng)
            counted.store.close()
            try? FileManager.default.removeItem(atPath: directory)
            rows.append(Row(size: size, rankPerSecond: reads.rank, entryPerSecond: reads.entry, countPerSecond: reads.count,
                            insertCounted: counted.rate, insertUncounted: uncounted, insertRaw: raw.insert,
                            rawSeekPerSecond: raw.seek, height: reads.height))
            print(Self.format(rows.last!))
        }
        return rows
    }

    static func options(counting: Bool = true) -> StoreOptions {
        var options = StoreOptions(durability: .none, initialMapSize: 1 << 30)
        options.maintainsCounts = counting
        options.journalRetention = JournalRetention(minimumCommits: 10)
        return options
    }

    /// Inserts `samples` into a new store at `path`, 1,000 per transaction; returns the store
    /// (closed when not counting) and rows per second.
    static func insert(_ samples: [Sample], counting: Bool, path: String) throws -> (store: Store, rate: Double) {
        let store = try Store(path: path, entities: [Sample.self], options: options(counting: counting))
        let start = Date()
        var i = 0
        while i < samples.count {
            let chunk = samples[i..<min(samples.count, i + 1_000)]
            try store.write { tx in for s in chunk { try tx.insert(s) } }
            i += 1_000
        }
        try store.sync()
        let rate = Double(samples.count) / Date().timeIntervalSince(start)
        if !counting { store.close() }
        return (store, rate)
    }

    private func measureReads(store: Store, size: Int, rng: inout SplitMix) throws -> (rank: Double, entry: Double, count: Double, height: Int) {
        let positions = (0..<operations).map { _ in Int.random(in: 0..<size, using: &rng) }
        return try store.read { tx in
            // entry(at:): random positions.
            var start = Date()
            var keys: [IndexKey] = []
            keys.reserveCapacity(positions.count)
            for p in positions {
                guard let key = try tx.indexKey(entity: "Sample", index: "byKey", at: p) else { fatalError("missing entry") }
                keys.append(key)
            }
            let entryRate = Double(positions.count) / Date().timeIntervalSince(start)
            // rank: of those keys.
            start = Date()
            var sum = 0
            for key in keys { sum &+= try tx.rank(entity: "Sample", index: "byKey", of: key) }
            let rankRate = Double(keys.count) / Date().timeIntervalSince(start)
            // count(range): between two random keys (decoded outside the timing).
            let bounds = try keys.map { try $0.components()[0] }
            start = Date()
            for i in stride(from: 0, to: bounds.count - 1, by: 2) {
                let (a, b) = bounds[i] < bounds[i + 1] ? (bounds[i], bounds[i + 1]) : (bounds[i + 1], bounds[i])
                sum &+= try tx.count(Sample.self, index: "byKey", range: IndexRange(from: .inclusive([a]), to: .exclusive([b])))
            }
            let countRate = Double(keys.count / 2) / Date().timeIntervalSince(start)
            if sum == 42 { print("") }  // keep the work observable
            return (rankRate, entryRate, countRate, try tx.indexHeight(entity: "Sample", index: "byKey"))
        }
    }

    /// Raw LMDB: the record put and the index-entry put per row, nothing else.
    private func rawInsert(_ samples: [Sample], path: String, rng: inout SplitMix) throws -> (insert: Double, seek: Double) {
        let env = try RawLMDB.open(path, mapSize: 16 << 30)
        defer { mdb_env_close(env) }
        let check = { (code: Int32) throws in try RawLMDB.check(code) }
        let records = try RawLMDB.database(env, "records"), index = try RawLMDB.database(env, "index")
        var txn: OpaquePointer?
        let start = Date()
        var value = [UInt8](repeating: 1, count: 24)
        var i = 0
        while i < samples.count {
            try check(mdb_txn_begin(env, nil, 0, &txn))
            for s in samples[i..<min(samples.count, i + 1_000)] {
                try value.withUnsafeMutableBytes { try RawLMDB.put(txn, records, key: s.id, value: $0) }
                try RawLMDB.put(txn, index, key: UInt64(bitPattern: s.key) ^ (1 << 63), value: UnsafeMutableRawBufferPointer(start: nil, count: 0))
            }
            try check(mdb_txn_commit(txn))
            i += 1_000
        }
        try check(mdb_env_sync(env, 1))
        let insertRate = Double(samples.count) / Date().timeIntervalSince(start)
        // Random seeks on the index: one cursor positioning per operation, as a lookup needs.
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn))
        defer { mdb_txn_abort(txn) }
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, index, &cursor))
        defer { mdb_cursor_close(cursor) }
        let probes = (0..<operations).map { _ in UInt64(bitPattern: samples[Int.random(in: 0..<samples.count, using: &rng)].key) ^ (1 << 63) }
        let seekStart = Date()
        var found = 0
        for probe in probes where RawLMDB.seek(cursor, atOrAfter: probe) { found += 1 }
        let seekRate = Double(probes.count) / Date().timeIntervalSince(seekStart)
        if found != probes.count { print("raw seeks missed \(probes.count - found)") }
        return (insertRate, seekRate)
    }

    static let header = """
        | entries | height | rank/s | entry(at:)/s | count(range)/s | raw LMDB seek/s | entry(at:) ÷ raw seek | insert rows/s, counted | uncounted | counted ÷ uncounted | raw LMDB rows/s | counted ÷ raw |
        |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
        """

    static func format(_ r: Row) -> String {
        func n(_ x: Double) -> String { Int(x).formatted() }
        let uncounted = r.insertUncounted.map(n) ?? "–"
        let ratio = r.insertUncounted.map { String(format: "%.2f", r.insertCounted / $0) } ?? "–"
        return "| \(r.size.formatted()) | \(r.height) | \(n(r.rankPerSecond)) | \(n(r.entryPerSecond)) | \(n(r.countPerSecond)) | \(n(r.rawSeekPerSecond)) | \(String(format: "%.2f", r.entryPerSecond / r.rawSeekPerSecond)) | \(n(r.insertCounted)) | \(uncounted) | \(ratio) | \(n(r.insertRaw)) | \(String(format: "%.2f", r.insertCounted / r.insertRaw)) |"
    }
}
