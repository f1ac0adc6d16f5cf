@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// A record whose index keys follow three skewed distributions.
struct Point: Entity, Equatable {
    var id: Int64
    /// Mostly 0: long runs of one component value.
    var bucket: Int64
    /// Increasing with every write: always appended at one end (descending index).
    var seq: Int64
    /// Uniformly random.
    var rnd: Int64
    var member: Bool

    static let indexes: [IndexDefinition] = [
        IndexDefinition("byBucket", ["bucket"]),
        IndexDefinition("bySeq", [.descending("seq")]),
        IndexDefinition("byRandom", ["rnd"]),
        IndexDefinition("members", ["rnd"], where: .field("member") == true),
    ]

    /// The model's sort key per index: components (negated when descending), then id.
    func modelKey(_ index: String) -> [Int64]? {
        switch index {
        case "byBucket": [bucket, id]
        case "bySeq": [-seq, id]
        case "byRandom": [rnd, id]
        default: member ? [rnd, id] : nil
        }
    }
}

@Suite(.blocking) struct CountedIndexTests {
    static let indexNames = Point.indexes.map(\.name)

    /// Twelve rounds of 10,000 writes (over a hundred thousand entries) with `Tools/test --long`,
    /// four in the quick run.
    @Test(arguments: testSeeds(2))
    func countsFollowRandomWritesOverAHundredThousandEntries(seed: UInt64) async throws {
        try await onOwnThread { try self.countsFollowRandomWritesOverAHundredThousandEntriesOnItsThread(seed: seed) }
    }

    /// The body of ``countsFollowRandomWritesOverAHundredThousandEntries(seed:)``, on a thread of its own (``onOwnThread(_:)``).
    func countsFollowRandomWritesOverAHundredThousandEntriesOnItsThread(seed: UInt64) throws {
        let rounds = TestSize.choose(quick: 4, long: 12)
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Point.self], options: StoreOptions(durability: .none))
            var rng = SeededGenerator(seed: seed)
            var model: [Int64: Point] = [:]
            var nextID: Int64 = 1, seq: Int64 = 0
            func point(_ id: Int64) -> Point {
                seq += 1
                return Point(id: id, bucket: Int.random(in: 0..<10, using: &rng) < 9 ? 0 : Int64.random(in: 1...50, using: &rng),
                             seq: seq, rnd: Int64.random(in: -1_000_000...1_000_000, using: &rng), member: Bool.random(using: &rng))
            }
            for round in 0..<rounds {
                var batch: [Point] = []
                var deletes: [Int64] = []
                for _ in 0..<10_000 { batch.append(point(nextID)); nextID += 1 }
                let existing = Array(model.keys)
                for _ in 0..<(round == 0 ? 0 : 1_500) {
                    guard let id = existing.randomElement(using: &rng) else { break }
                    if Bool.random(using: &rng) { deletes.append(id) } else { batch.append(point(id)) }
                }
                try store.write { tx in
                    for p in batch { try tx.put(p) }
                    for id in deletes { try tx.delete(Point.self, id: id) }
                }
                for p in batch { model[p.id] = p }
                for id in deletes { model[id] = nil }
                try check(store, model: model, rng: &rng, context: "seed \(seed) round \(round)")
            }
            #expect(model.count > rounds * 8_000)
        }
    }

    func check(_ store: Store, model: [Int64: Point], rng: inout SeededGenerator, context: String) throws {
        try store.read { (tx: ReadTransaction) throws in
            for name in Self.indexNames {
                let sorted = model.values.compactMap { $0.modelKey(name) }.sorted { $0.lexicographicallyPrecedes($1) }
                #expect(try tx.count(Point.self, index: name) == sorted.count, "\(context) \(name)")
                let index = try tx.entity("Point").index(named: name)
                for _ in 0..<150 {
                    let i = Int.random(in: 0..<max(1, sorted.count), using: &rng)
                    guard i < sorted.count else { continue }
                    // entry(at:) returns the model's i-th entry; rank of that entry is i.
                    let entry = try tx.entry(entity: "Point", index: name, at: i)
                    #expect(entry?.id == .int(sorted[i].last!), "\(context) \(name) entry(at: \(i))")
                    let key = try tx.accessCounts(of: index) { try $0.entry(at: i, in: $1) }!
                    #expect(try tx.accessCounts(of: index) { try $0.rank(of: key, in: $1) } == i, "\(context) \(name) rank")
                }
                let problems = try tx.accessCounts(of: index) { try $0.check(in: $1, checkEveryPosition: false) }
                #expect(problems.isEmpty, "\(context) \(name): \(problems.prefix(3))")
            }
            // Range counts: a bucket of duplicates, and random ranges of the random component.
            let zeros = model.values.filter { $0.bucket == 0 }.count
            #expect(try tx.count(Point.self, index: "byBucket", range: .prefix(0)) == zeros, "\(context)")
            for _ in 0..<50 {
                let a = Int64.random(in: -1_000_000...1_000_000, using: &rng), b = Int64.random(in: a...1_000_000, using: &rng)
                let want = model.values.filter { $0.rnd >= a && $0.rnd < b }.count
                let got = try tx.count(Point.self, index: "byRandom", range: IndexRange(from: .inclusive([.int(a)]), to: .exclusive([.int(b)])))
                #expect(got == want, "\(context) [\(a), \(b))")
                let members = model.values.filter { $0.member && $0.rnd > a && $0.rnd <= b }.count
                #expect(try tx.count(Point.self, index: "members", range: IndexRange(from: .exclusive([.int(a)]), to: .inclusive([.int(b)]))) == members)
            }
        }
    }

    @Test func emptySingleAndEdgeRanges() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Point.self])
            try store.read { (tx: ReadTransaction) throws in
                #expect(try tx.count(Point.self, index: "byRandom") == 0)
                #expect(try tx.entry(entity: "Point", index: "byRandom", at: 0) == nil)
                #expect(try tx.rank(entity: "Point", index: "byRandom", before: [5]) == 0)
            }
            try store.write { tx in try tx.put(Point(id: 1, bucket: 0, seq: 1, rnd: 5, member: false)) }
            try store.read { (tx: ReadTransaction) throws in
                #expect(try tx.count(Point.self, index: "byRandom") == 1)
                #expect(try tx.count(Point.self, index: "members") == 0)
                #expect(try tx.entry(entity: "Point", index: "byRandom", at: 0)?.id == 1)
                #expect(try tx.entry(entity: "Point", index: "byRandom", at: 1) == nil)
                #expect(try tx.entry(entity: "Point", index: "byRandom", at: -1) == nil)
                #expect(try tx.rank(entity: "Point", index: "byRandom", before: [5]) == 0)
                #expect(try tx.rank(entity: "Point", index: "byRandom", before: [6]) == 1)
            }
            try store.write { tx in for i in 2...200 { try tx.put(Point(id: Int64(i), bucket: Int64(i % 3), seq: Int64(i), rnd: Int64(i / 10), member: i % 2 == 0)) } }
            try store.read { (tx: ReadTransaction) throws in
                let fives = IndexRange(from: .inclusive([5]), to: .inclusive([5]))
                #expect(try tx.count(Point.self, index: "byRandom", range: fives) == 11)  // ids 1, 50...59
                #expect(try tx.count(Point.self, index: "byRandom", range: IndexRange(from: .exclusive([5]), to: .exclusive([5]))) == 0)
                #expect(try tx.count(Point.self, index: "byRandom", range: IndexRange(from: .inclusive([1_000]))) == 0)
                #expect(try tx.count(Point.self, index: "byRandom", range: IndexRange(to: .exclusive([-1]))) == 0)
                #expect(try tx.count(Point.self, index: "byRandom", range: .prefix(999)) == 0)
                #expect(try tx.count(Point.self, index: "members") == 100)
                // Descending: the newest seq is position 0.
                #expect(try tx.entry(entity: "Point", index: "bySeq", at: 0)?.id == 200)
            }
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func queryPositionsAndObjectsAgreeWithTheirOrder() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Point.self], options: StoreOptions(durability: .none))
            var rng = SeededGenerator(seed: 5)
            let points = (1...3_000).map { Point(id: Int64($0), bucket: Int64.random(in: 0..<4, using: &rng), seq: Int64($0),
                                                  rnd: Int64.random(in: 0..<500, using: &rng), member: Bool.random(using: &rng)) }
            try store.write { tx in for p in points { try tx.put(p) } }
            try store.read { (tx: ReadTransaction) throws in
                for reverse in [false, true] {
                    let query = Query(Point.self, index: "byBucket", range: .prefix(2), reverse: reverse)
                    let all = try tx.objects(in: query)
                    #expect(try tx.count(query) == all.count && all.count == points.filter { $0.bucket == 2 }.count)
                    for i in stride(from: 0, to: all.count, by: 37) {
                        #expect(try tx.object(at: i, in: query) == all[i])
                        #expect(try tx.position(of: all[i].id, in: query) == i)
                        #expect(try tx.objects(in: query, offset: i, limit: 3) == Array(all[i..<min(all.count, i + 3)]))
                    }
                    #expect(try tx.object(at: all.count, in: query) == nil)
                    let outside = points.first { $0.bucket != 2 }!
                    #expect(try tx.position(of: outside.id, in: query) == nil)
                    #expect(try tx.position(of: 999_999, in: query) == nil)
                }
                // A section of a query is the query narrowed by the next component.
                let members = Query(Point.self, index: "members")
                let section = members.narrowed(to: [.int(7)])
                #expect(try tx.count(section) == points.filter { $0.member && $0.rnd == 7 }.count)
            }
        }
    }

    /// A write transaction applies its count changes in batches; its own reads of counts, ranks
    /// and positions must still see every write made before them, and a rollback none.
    @Test func countsInsideAWriteTransactionSeeItsOwnWrites() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Point.self], options: StoreOptions(durability: .none))
            var rng = SeededGenerator(seed: 17)
            var model: [Int64: Point] = [:]
            func point(_ id: Int64) -> Point {
                Point(id: id, bucket: Int64.random(in: 0..<3, using: &rng), seq: id, rnd: Int64.random(in: 0..<1_000, using: &rng),
                      member: Bool.random(using: &rng))
            }
            try store.write { tx in
                for step in 0..<30 {
                    // A burst of writes, sometimes past the deferral limit, then reads of counts.
                    for _ in 0..<(step % 7 == 0 ? 5_000 : Int.random(in: 1...60, using: &rng)) {
                        let id = Int64.random(in: 1...20_000, using: &rng)
                        if model[id] != nil, Bool.random(using: &rng) {
                            try tx.delete(Point.self, id: id)
                            model[id] = nil
                        } else {
                            let p = point(id)
                            try tx.put(p)
                            model[id] = p
                        }
                    }
                    let sorted = model.values.map { [$0.rnd, $0.id] }.sorted { $0.lexicographicallyPrecedes($1) }
                    #expect(try tx.count(Point.self, index: "byRandom") == sorted.count, "step \(step)")
                    let query = Query(Point.self, index: "byRandom")
                    for _ in 0..<10 {
                        let i = Int.random(in: 0..<sorted.count, using: &rng)
                        #expect(try tx.object(at: i, in: query)?.id == sorted[i][1], "step \(step) object(at: \(i))")
                        #expect(try tx.position(of: sorted[i][1], in: query) == i, "step \(step) position")
                    }
                    let low = Int64.random(in: 0..<1_000, using: &rng)
                    #expect(try tx.count(Point.self, index: "byRandom", range: IndexRange(from: .inclusive([.int(low)])))
                        == sorted.filter { $0[0] >= low }.count, "step \(step) range")
                    let index = try tx.entity("Point").index(named: "byRandom")
                    #expect(try tx.accessCounts(of: index) { try $0.check(in: $1, checkEveryPosition: false) }.isEmpty)
                }
            }
            let committed = model.count
            // A transaction that writes, reads its counts, writes more, then throws leaves nothing.
            struct Abandon: Error {}
            #expect(throws: Abandon.self) {
                try store.write { tx in
                    for i in 30_001...33_000 { try tx.put(point(Int64(i))) }
                    _ = try tx.count(Point.self, index: "byRandom")
                    for id in model.keys.prefix(2_000) { try tx.delete(Point.self, id: id) }
                    throw Abandon()
                }
            }
            try store.read { (tx: ReadTransaction) throws in
                for name in Self.indexNames where name != "members" {
                    #expect(try tx.count(Point.self, index: name) == committed, "\(name)")
                }
            }
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func everyPositionAgreesAfterDeletesShrinkTheTree() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Point.self], options: StoreOptions(durability: .none))
            var rng = SeededGenerator(seed: 11)
            try store.write { tx in
                for i in 1...20_000 { try tx.put(Point(id: Int64(i), bucket: 0, seq: Int64(i), rnd: Int64.random(in: 0...1_000_000, using: &rng), member: true)) }
            }
            // Delete most entries, in runs and at random, so buckets and groups merge and the tree shrinks.
            try store.write { tx in
                for i in 1...20_000 where i % 10 != 0 || i > 15_000 { try tx.delete(Point.self, id: Int64(i)) }
            }
            let issues = try store.verify()
            #expect(issues.isEmpty, "\(issues.prefix(3))")
            try store.read { (tx: ReadTransaction) throws in
                let index = try tx.entity("Point").index(named: "byRandom")
                #expect(try tx.accessCounts(of: index) { try $0.height(in: $1) } <= 2)
                #expect(try tx.count(Point.self, index: "byRandom") == 1_500)
            }
        }
    }
}
