@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Random ranges (prefix, inclusive/exclusive bounds, direction, offset, limit) over a compound
/// index with a descending component and nils, compared with filtering and sorting a model.
@Suite(.blocking) struct RangeQueryTests {
    let index = Item.indexes[0]  // byGroupScore: group ascending, score descending

    /// Compares the first `bound.count` components of `key` (after `skip`) with `bound`, in index order.
    func compare(_ key: [FieldValue], _ bound: [FieldValue], skip: Int) -> Int {
        for (i, b) in bound.enumerated() {
            let c = FieldValue.compare(key[skip + i], b) * (index.components[skip + i].descending ? -1 : 1)
            if c != 0 { return c }
        }
        return 0
    }

    @Test(arguments: testSeeds(3))
    func randomRangesMatchTheModel(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            var random = RandomValues(seed: seed)
            let groups: [Int64?] = [nil, 0, 1, 2, 3]
            let scores: [Double] = [-2, -1, -0.0, 0, 1, 2, 3, .infinity, .nan]
            var items: [Item] = []
            for i in 0..<300 {
                items.append(Item(id: Int64(i), group: groups.randomElement(using: &random.rng)!, score: scores.randomElement(using: &random.rng)!,
                                  name: "n\(i)", flag: false, tag: nil))
            }
            try store.write { tx in for item in items { try tx.put(item) } }
            let keys = items.map { StoreModelTests.key(index, $0.fields)! }.sorted { StoreModelTests.order(index, $0, $1) }
            func component(_ i: Int) -> FieldValue {
                i == 0 ? (groups.randomElement(using: &random.rng)!.map { .int($0) } ?? .null) : .double(scores.randomElement(using: &random.rng)!)
            }
            var checked = 0, invalid = 0
            for _ in 0..<1_500 {
                let prefixCount = Int.random(in: 0...1, using: &random.rng)
                let prefix = (0..<prefixCount).map { component($0) }
                func bound() -> IndexRange.Bound? {
                    let n = Int.random(in: 0...(2 - prefixCount), using: &random.rng)
                    if n == 0 { return nil }
                    let values = (0..<n).map { component(prefixCount + $0) }
                    return Bool.random(using: &random.rng) ? .inclusive(values) : .exclusive(values)
                }
                let range = IndexRange(prefix: prefix, from: bound(), to: bound())
                let reverse = Bool.random(using: &random.rng)
                let offset = Int.random(in: 0...3, using: &random.rng) == 0 ? Int.random(in: 0...40, using: &random.rng) : 0
                let limit: Int? = Bool.random(using: &random.rng) ? Int.random(in: 0...30, using: &random.rng) : nil

                // The model: filter by prefix and bounds, then order, offset and limit.
                if let l = range.lower, let u = range.upper {
                    let shared = min(l.values.count, u.values.count)
                    let padded = prefix + Array(l.values.prefix(shared))
                    if compare(padded, Array(u.values.prefix(shared)), skip: prefixCount) > 0 {
                        #expect(throws: FeedstoreError.self) { try store.read { try $0.query(Item.self, index: index.name, range: range) } }
                        invalid += 1
                        continue
                    }
                }
                var want = keys.filter { key in
                    guard zip(prefix, key).allSatisfy({ $0 == $1 }) else { return false }
                    if let l = range.lower {
                        let c = compare(key, l.values, skip: prefixCount)
                        if l.isInclusive ? c < 0 : c <= 0 { return false }
                    }
                    if let u = range.upper {
                        let c = compare(key, u.values, skip: prefixCount)
                        if u.isInclusive ? c > 0 : c >= 0 { return false }
                    }
                    return true
                }
                if reverse { want.reverse() }
                want = Array(want.dropFirst(offset).prefix(limit ?? .max))
                let got = try store.read {
                    try $0.entries(entity: "Item", index: index.name, range: range, reverse: reverse, offset: offset, limit: limit)
                }.map { $0.key + [$0.id] }
                #expect(got == want, "seed \(seed): \(range) reverse \(reverse) offset \(offset) limit \(String(describing: limit))")
                let count = try store.read { try $0.count(Item.self, index: index.name, range: range) }
                #expect(count == keys.filter { k in zip(prefix, k).allSatisfy { $0 == $1 } }.count || range.lower != nil || range.upper != nil)
                checked += 1
            }
            #expect(checked > 1_000 && invalid > 10, "checked \(checked), invalid \(invalid)")
        }
    }
}
