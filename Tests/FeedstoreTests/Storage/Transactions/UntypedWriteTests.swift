@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Writing records by field name, without the application's types: what tools and loaders do.
@Suite(.blocking) struct UntypedWriteTests {
    @Test func recordsWrittenByNameReadBackAsTheirTypes() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            let tag = UUID()
            try store.write { tx in try tx.put(Item(id: 1, group: 2, score: 0.5, name: "typed", flag: true, tag: tag)) }
            // JSON's kinds, converted to the catalog's: an unsigned id for an int key, a UUID string.
            try store.write { tx in
                try tx.put(entity: "Item", id: .uint(7), fields: ["id": .int(7), "group": .int(3), "score": .int(2), "name": "by name",
                                                                  "flag": false, "tag": .string(tag.uuidString)])
            }
            let item = try store.read { try $0.get(Item.self, id: 7) }
            #expect(item?.name == "by name" && item?.score == 2 && item?.tag == tag && item?.group == 3)
            #expect(try store.read { try $0.count(Item.self, index: "byName") } == 2)
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func badInputIsATypedErrorAndWritesNothing() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            try store.write { tx in try tx.put(entity: "Item", id: 1, fields: ["id": 1, "name": "one", "score": 1.5, "flag": true]) }
            #expect(throws: FeedstoreError.unknownEntity("Nope", entities: ["Item"])) { try store.write { tx in try tx.put(entity: "Nope", id: 1, fields: [:]) } }
            #expect { try store.write { tx in try tx.put(entity: "Item", id: "x", fields: ["name": "x"]) } } throws: { error in
                if case let FeedstoreError.invalidRange(_, _, reason) = error { return reason.contains("stored as int") }
                return false
            }
            // A unique index refuses the second "one"; nothing of it is written.
            #expect { try store.write { tx in try tx.put(entity: "Item", id: 2, fields: ["id": 2, "name": "one", "score": 0, "flag": false]) } }
                throws: { error in if case FeedstoreError.uniqueViolation = error { true } else { false } }
            #expect(try store.read { try $0.count(entity: "Item") } == 1)
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func entitiesAreDeclaredWithoutTypes() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", options: StoreOptions(durability: .none))
            try store.declare(entity: "Doc", primaryKeyKind: "string", indexes: [IndexDefinition("byTitle", ["title"])])
            try store.write { tx in
                for (id, title) in [("b", "second"), ("a", "first"), ("c", "third")] {
                    try tx.put(entity: "Doc", id: .string(id), fields: ["id": .string(id), "title": .string(title)])
                }
            }
            let titles = try store.read { try $0.entries(entity: "Doc", index: "byTitle").map { $0.record["title"] } }
            #expect(titles == ["first", "second", "third"])
            #expect(try store.catalog.entities["Doc"]?.fields.map(\.name).sorted() == ["id", "title"])
            // The same declaration again changes nothing; a different key kind or a bad index is refused.
            try store.declare(entity: "Doc", primaryKeyKind: "string", indexes: [IndexDefinition("byTitle", ["title"])])
            #expect(try store.read { try $0.count(entity: "Doc", index: "byTitle") } == 3)
            for (kind, indexes) in [("uint", [IndexDefinition]()), ("date", []), ("string", [IndexDefinition("", ["title"])])] {
                #expect("\(kind) \(indexes)") {
                    try store.declare(entity: "Doc", primaryKeyKind: kind, indexes: indexes)
                } throws: { error in
                    if case FeedstoreError.invalidIndexDefinition = error { true } else { false }
                }
            }
            #expect(try store.verify().isEmpty)
        }
    }
}
