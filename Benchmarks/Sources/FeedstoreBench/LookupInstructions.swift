@_spi(Benchmarking) import Feedstore
import Foundation

/// The instructions one counted lookup executes, at any size: run under
/// `valgrind --tool=callgrind --toggle-collect=*LookupInstructions*lookups*`, which counts only
/// the lookups, so the figure is the same on a quiet or a busy machine. Wall time at 10 million
/// entries is bound by cache misses, which no lookup can avoid (raw LMDB's own seek slows down
/// as much); the instruction count shows what the structure itself costs as it grows.
struct LookupInstructions {
    let size: Int
    let path: String
    let operations: Int

    enum Lookup: String, CaseIterable {
        case entry, rank, count
        /// A count of a prefix and of a range, through queries that name the index and give
        /// `FieldValue`s, or that name a typed index and give Swift values: the same work.
        case namedQuery = "named-query", typedQuery = "typed-query"
    }

    /// Builds the counted store of the `counts` benchmark at `size` under `path` (run natively:
    /// the store is reused by the runs under callgrind).
    func build() throws {
        try? FileManager.default.removeItem(atPath: path)
        let (samples, _) = CountedIndexBench.samples(size)
        let (store, rate) = try CountedIndexBench.insert(samples, counting: true, path: path)
        store.close()
        print("built \(size.formatted()) entries at \(path) (\(Int(rate).formatted()) rows/s)")
    }

    /// Opens the store and runs `operations` lookups of one kind at random positions.
    func run(_ lookup: Lookup) throws {
        let store = try Store(path: path, entities: [Sample.self], options: CountedIndexBench.options())
        defer { store.close() }
        let (samples, generator) = CountedIndexBench.samples(size)
        var rng = generator
        let positions = (0..<operations).map { _ in Int.random(in: 0..<size, using: &rng) }
        let keys = positions.map { samples[$0].key }.sorted()
        let result = try store.read { tx in
            let height = try tx.indexHeight(entity: "Sample", index: "byKey")
            return (height, try Self.lookups(lookup, positions: positions, keys: keys, in: tx))
        }
        print("\(lookup.rawValue): \(operations.formatted()) lookups at \(size.formatted()) entries, height \(result.0) (checksum \(result.1))")
    }

    /// What callgrind counts: nothing but the lookups.
    @inline(never)
    static func lookups(_ lookup: Lookup, positions: [Int], keys: [Int64], in tx: ReadTransaction) throws -> Int {
        var sum = 0
        switch lookup {
        case .entry:
            for p in positions { sum &+= try tx.indexKey(entity: "Sample", index: "byKey", at: p)?.bytes.count ?? 0 }
        case .rank:
            for k in keys { sum &+= try tx.rank(entity: "Sample", index: "byKey", before: [.int(k)]) }
        case .count:
            for (a, b) in zip(keys, keys.dropFirst()) {
                sum &+= try tx.count(Sample.self, index: "byKey", range: IndexRange(from: .inclusive([.int(a)]), to: .exclusive([.int(b)])))
            }
        case .namedQuery:
            for (a, b) in zip(keys, keys.dropFirst()) {
                sum &+= try tx.count(Query(Sample.self, index: "byKey", range: .prefix(.int(a))))
                sum &+= try tx.count(Query(Sample.self, index: "byKey", range: IndexRange(from: .inclusive([.int(a)]), to: .inclusive([.int(b)]))))
            }
        case .typedQuery:
            for (a, b) in zip(keys, keys.dropFirst()) {
                sum &+= try tx.count(Query(Sample.byKey, prefix: a))
                sum &+= try tx.count(Query(Sample.byKey, from: a, to: b))
            }
        }
        return sum
    }
}
