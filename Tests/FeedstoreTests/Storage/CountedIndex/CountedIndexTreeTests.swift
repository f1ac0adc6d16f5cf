@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The counted tree on its own, with tiny buckets and nodes so that a few thousand entries make
/// a deep tree: random inserts and deletes of keys of random length (some long enough to split
/// nodes by size), with the invariant checker and a sorted model after every transaction.
@Suite(.blocking) struct CountedIndexTreeTests {
    func withTree(_ limits: CountedIndex.Limits, _ body: (LMDBEnvironment, CountedIndex) throws -> Void) throws {
        try withTemporaryDirectory { dir in
            let env = try LMDBEnvironment(path: dir, flags: .noSync, mapSize: 256 << 20, maxDatabases: 4, maxReaders: 8, mode: 0o600)
            let txn = try LMDBTransaction(environment: env, readOnly: false)
            var tree = CountedIndex(entries: try txn.openDatabase(named: "entries", create: true)!,
                                    counts: try txn.openDatabase(named: "counts", create: true)!)
            tree.limits = limits
            try tree.rebuild(in: txn)
            try txn.commit()
            try body(env, tree)
        }
    }

    /// Buckets of 4 entries and nodes of 4 children (or 600 bytes): deep trees from few entries.
    static let tiny = CountedIndex.Limits(maximumBucket: 4, maximumChildren: 4, maximumNodeBytes: 600)

    static func randomKey(_ rng: inout SeededGenerator) -> [UInt8] {
        let length = Int.random(in: 0..<10, using: &rng) == 0 ? Int.random(in: 100...400, using: &rng) : Int.random(in: 1...6, using: &rng)
        // A small alphabet makes shared prefixes (and so long separators) common.
        return (0..<length).map { _ in [0x00, 0x01, 0x7F, 0xFE, 0xFF].randomElement(using: &rng)! }
    }

    @Test(arguments: testSeeds(4))
    func randomInsertsAndDeletesKeepEveryInvariant(seed: UInt64) throws {
        try withTree(Self.tiny) { env, tree in
            var rng = SeededGenerator(seed: seed)
            var model = Set<[UInt8]>()
            var maxHeight = 1
            for round in 0..<120 {
                let txn = try LMDBTransaction(environment: env, readOnly: false)
                // Grow for a while, then shrink, so that merges and root removal happen too.
                let growing = round < 70
                for _ in 0..<Int.random(in: 1...40, using: &rng) {
                    if growing ? Int.random(in: 0..<4, using: &rng) != 0 : Int.random(in: 0..<4, using: &rng) == 0 {
                        let key = Self.randomKey(&rng)
                        guard !model.contains(key) else { continue }
                        try txn.put(tree.entries, key: key.isEmpty ? [0] : key, value: [])
                        try tree.apply([CountedIndex.Change(key: key.isEmpty ? [0] : key, delta: 1)], in: txn)
                        model.insert(key.isEmpty ? [0] : key)
                    } else if let key = model.randomElement(using: &rng) {
                        try txn.delete(tree.entries, key: key)
                        try tree.apply([CountedIndex.Change(key: key, delta: -1)], in: txn)
                        model.remove(key)
                    }
                }
                maxHeight = max(maxHeight, try tree.height(in: txn))
                let problems = try tree.check(in: txn)
                #expect(problems.isEmpty, "seed \(seed) round \(round): \(problems.prefix(3))")
                let sorted = model.sorted { $0.lexicographicallyPrecedes($1) }
                for _ in 0..<20 where !sorted.isEmpty {
                    let i = Int.random(in: 0..<sorted.count, using: &rng)
                    #expect(try tree.entry(at: i, in: txn) == sorted[i])
                    let probe = Self.randomKey(&rng)
                    #expect(try tree.rank(of: probe, in: txn) == sorted.filter { $0.lexicographicallyPrecedes(probe) }.count)
                }
                try txn.commit()
                if !problems.isEmpty { return }
            }
            #expect(maxHeight >= 4, "seed \(seed): the tree only reached height \(maxHeight)")
        }
    }

    /// Count changes are sorted on their keys' first 16 bytes as words, and on whole keys only
    /// where those tie: the order must be the stable key order, for keys shorter and longer than
    /// 16 bytes, with zero bytes (which padding could be confused with) and repeated keys.
    @Test(arguments: testSeeds(2))
    func countChangesSortInKeyOrder(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<300 {
            let alphabet: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFF]
            let pool: [[UInt8]] = (0..<Int.random(in: 1...40, using: &rng)).map { _ in
                (0..<Int.random(in: 0...24, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
            }
            let changes = (0..<Int.random(in: 2...60, using: &rng)).map { _ in
                CountedIndex.Change(key: pool.randomElement(using: &rng)!, delta: Int.random(in: -1...1, using: &rng))
            }
            let sorted = CountedIndex.sortedByKey(changes)
            let expected = changes.enumerated().sorted { a, b in
                a.element.key == b.element.key ? a.offset < b.offset : a.element.key.lexicographicallyPrecedes(b.element.key)
            }.map(\.element)
            #expect(sorted.map(\.key) == expected.map(\.key) && sorted.map(\.delta) == expected.map(\.delta), "seed \(seed)")
        }
    }

    /// A split edits a node's stored bytes in place of parsing and encoding it: the edited bytes
    /// must be those of the parsed node with the child replaced.
    @Test(arguments: testSeeds(2))
    func replacingAChildInStoredBytesMatchesEncodingTheEditedNode(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<2_000 {
            let n = Int.random(in: 1...12, using: &rng)
            let node = CountNode(fences: (0..<n).map { _ in Self.randomKey(&rng) }, counts: (0..<n).map { _ in Int.random(in: 0...1_000, using: &rng) })
            let child = Int.random(in: 0..<n, using: &rng)
            let separators = (0..<Int.random(in: 1...3, using: &rng)).map { _ in Self.randomKey(&rng) }
            let counts = (0...separators.count).map { _ in Int.random(in: 0...100, using: &rng) }
            var expected = node
            expected.counts.replaceSubrange(child...child, with: counts)
            expected.fences.insert(contentsOf: separators, at: child + 1)
            let edited = try node.encoded().withUnsafeBytes { bytes in
                try CountNodeView(bytes).replacingChild(child, withCounts: counts, separators: separators)
            }
            #expect(edited == expected.encoded(), "seed \(seed): child \(child) of \(n)")
        }
    }

    /// Changes applied in batches (as a write transaction applies its deferred counts): a batch
    /// may overfill a bucket many times over, or empty a run of buckets, at once.
    @Test(arguments: testSeeds(4))
    func batchesOfChangesKeepEveryInvariant(seed: UInt64) throws {
        try withTree(Self.tiny) { env, tree in
            var rng = SeededGenerator(seed: seed)
            var model = Set<[UInt8]>()
            for round in 0..<60 {
                let txn = try LMDBTransaction(environment: env, readOnly: false)
                var changes: [CountedIndex.Change] = []
                let growing = round < 35
                for _ in 0..<Int.random(in: 1...150, using: &rng) {
                    if growing ? Int.random(in: 0..<4, using: &rng) != 0 : Int.random(in: 0..<4, using: &rng) == 0 {
                        let key = Self.randomKey(&rng) + [1]
                        guard model.insert(key).inserted else { continue }
                        try txn.put(tree.entries, key: key, value: [])
                        changes.append(CountedIndex.Change(key: key, delta: 1))
                    } else if let key = model.randomElement(using: &rng) {
                        // Removing an entry added in the same batch leaves both changes in it.
                        model.remove(key)
                        try txn.delete(tree.entries, key: key)
                        changes.append(CountedIndex.Change(key: key, delta: -1))
                    }
                }
                try tree.apply(changes.shuffled(using: &rng), in: txn)
                let problems = try tree.check(in: txn)
                #expect(problems.isEmpty, "seed \(seed) round \(round): \(problems.prefix(3))")
                try txn.commit()
                if !problems.isEmpty { return }
            }
        }
    }

    /// Thousands of appended keys in one batch grow one bucket into hundreds, and the root into
    /// a tree several levels high in one step; removing most of them again empties long runs of
    /// buckets at once.
    @Test func oneBatchAppendsThenRemovesARun() throws {
        try withTree(Self.tiny) { env, tree in
            let keys = (0..<3_000).map { (i: Int) -> [UInt8] in [UInt8(i >> 8), UInt8(i & 0xFF)] }
            let txn = try LMDBTransaction(environment: env, readOnly: false)
            for key in keys { try txn.put(tree.entries, key: key, value: []) }
            try tree.apply(keys.map { CountedIndex.Change(key: $0, delta: 1) }, in: txn)
            #expect(try tree.check(in: txn).isEmpty)
            #expect(try tree.height(in: txn) >= 5)
            let removed = keys[100..<2_900]
            for key in removed { try txn.delete(tree.entries, key: key) }
            try tree.apply(removed.map { CountedIndex.Change(key: $0, delta: -1) }, in: txn)
            #expect(try tree.check(in: txn).isEmpty)
            #expect(try tree.entry(at: 100, in: txn) == keys[2_900])
            try txn.commit()
        }
    }

    @Test func rebuildMakesAValidTreeAtEverySize() throws {
        try withTree(Self.tiny) { env, tree in
            var rng = SeededGenerator(seed: 3)
            for size in [0, 1, 3, 4, 5, 17, 64, 65, 300, 1_000] {
                let txn = try LMDBTransaction(environment: env, readOnly: false)
                try txn.drop(tree.entries, delete: false)
                var keys = Set<[UInt8]>()
                while keys.count < size { keys.insert(Self.randomKey(&rng) + [1]) }
                for key in keys { try txn.put(tree.entries, key: key, value: []) }
                try tree.rebuild(in: txn)
                let problems = try tree.check(in: txn)
                #expect(problems.isEmpty, "size \(size): \(problems.prefix(3))")
                try txn.commit()
            }
        }
    }

    @Test func corruptNodesAreTypedErrors() throws {
        try withTree(.standard) { env, tree in
            let txn = try LMDBTransaction(environment: env, readOnly: false)
            try txn.put(tree.entries, key: [1], value: [])
            try tree.apply([CountedIndex.Change(key: [1], delta: 1)], in: txn)
            for bad: [UInt8] in [[], [1], [5, 0, 1, 2], [1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0]] {
                try txn.put(tree.counts, key: CountedIndex.nodeKey(1, []), value: bad)
                #expect(throws: FeedstoreError.self) { try tree.rank(of: [1], in: txn) }
                #expect(throws: FeedstoreError.self) { try tree.apply([CountedIndex.Change(key: [2], delta: 1)], in: txn) }
            }
            txn.abort()
        }
    }
}
