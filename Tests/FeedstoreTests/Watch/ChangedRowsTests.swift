@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The positions stage alone, against a real counted index: random inserts, deletes, key
/// changes and in-place updates, then each changed row's old and new position (worked out from
/// the new index and the changed keys, never from the old snapshot) compared with its place in
/// full reads of the query before and after, for a whole index and a prefix, in both directions.
@Suite(.blocking) struct ChangedRowsTests {
    static let index = "byGroupScore"

    @Test(arguments: testSeeds(3, base: 301))
    func positionsMatchFullReadsBeforeAndAfter(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            var rng = SeededGenerator(seed: seed)
            let store = try Store(path: dir + "/s", entities: [Item.self])
            defer { store.close() }
            func item(_ id: Int64) -> Item {
                Item(id: id, group: Int64.random(in: 0..<3, using: &rng), score: Double(Int.random(in: 0..<50, using: &rng)), name: "n\(id)",
                     flag: false, tag: nil)
            }
            var nextID: Int64 = 1
            try store.write { tx in
                for _ in 0..<150 {
                    try tx.put(item(nextID))
                    nextID += 1
                }
            }
            for (range, reverse) in [(IndexRange.all, false), (.all, true), (.prefix(.int(1)), false), (.prefix(.int(1)), true)] {
                func order() throws -> [FieldValue] {
                    try store.read { try $0.ids(entity: "Item", index: Self.index, range: range, reverse: reverse) }
                }
                func entryKeys() throws -> [FieldValue: [UInt8]] {
                    try store.read { tx in
                        let index = try tx.entity("Item").index(named: Self.index)
                        var keys: [FieldValue: [UInt8]] = [:]
                        for id in try tx.ids(entity: "Item", index: nil, range: .all) {
                            let primaryKey = try KeyEncoding.encode([id])
                            keys[id] = try index.key(of: try #require(try tx.record(entity: "Item", id: id)), primaryKey: primaryKey)
                        }
                        return keys
                    }
                }
                let (oldOrder, oldKeys) = (try order(), try entryKeys())

                // Random changes: what each did, as the change feed folds it.
                var allFields: Set<FieldValue> = [], touched: Set<FieldValue> = []
                try store.write { tx in
                    for _ in 0..<Int.random(in: 1...40, using: &rng) {
                        let existing = Int64.random(in: 1..<nextID, using: &rng)
                        switch Int.random(in: 0..<4, using: &rng) {
                        case 0:
                            try tx.put(item(nextID))
                            allFields.insert(.int(nextID))
                            nextID += 1
                        case 1:
                            if try tx.delete(Item.self, id: existing) { allFields.insert(.int(existing)) }
                        case 2:
                            guard try tx.get(Item.self, id: existing) != nil else { continue }
                            try tx.put(item(existing))  // a new group and score: the key may change
                            touched.insert(.int(existing))
                        default:
                            guard var record = try tx.get(Item.self, id: existing) else { continue }
                            record.flag.toggle()  // the same key, a changed field
                            try tx.put(record)
                            touched.insert(.int(existing))
                        }
                    }
                }
                let (newOrder, newKeys) = (try order(), try entryKeys())
                let changes = try allFields.union(touched).map { id in
                    ChangedRecord(id: id, primaryKey: try KeyEncoding.encode([id]), oldKey: oldKeys[id], newKey: newKeys[id],
                                  fieldIDs: allFields.contains(id) ? [] : [1], allFields: allFields.contains(id))
                }

                let context = "seed \(seed), range \(range), reverse \(reverse)"
                try store.read { tx in
                    let rows = try ChangedRows(changes, query: try tx.resolve(entity: "Item", index: Self.index, range: range), reverse: reverse, in: tx)
                    #expect(rows.oldCount == oldOrder.count && rows.newCount == newOrder.count, "\(context)")
                    let reported = Dictionary(uniqueKeysWithValues: rows.rows.map { ($0.change.id, $0) })
                    for change in changes {
                        let (old, new) = (oldOrder.firstIndex(of: change.id), newOrder.firstIndex(of: change.id))
                        guard let row = reported[change.id] else {
                            #expect(old == nil && new == nil, "\(change.id) is a row before or after but not reported, \(context)")
                            continue
                        }
                        #expect(row.old == old && row.new == new, "\(change.id): \(String(describing: row.old))→\(String(describing: row.new)), expected \(String(describing: old))→\(String(describing: new)), \(context)")
                    }
                    #expect(rows.oldPositions == rows.rows.compactMap(\.old).sorted() && rows.newPositions == rows.rows.compactMap(\.new).sorted(), "\(context)")
                }
            }
        }
    }
}
