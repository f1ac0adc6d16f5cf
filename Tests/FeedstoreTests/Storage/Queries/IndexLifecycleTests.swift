@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Indexes follow their declarations across opens: added ones are built, changed ones rebuilt,
/// removed ones dropped; a unique index that existing data violates is refused, store unchanged.
@Suite(.blocking) struct IndexLifecycleTests {
    struct PlainV1: Entity { var id: Int64; var city: String; var age: Int; static let entityName = "Person" }
    struct IndexedV2: Entity {
        var id: Int64; var city: String; var age: Int
        static let entityName = "Person"
        static let indexes = [IndexDefinition("byAge", ["age"])]
    }
    struct ChangedV3: Entity {
        var id: Int64; var city: String; var age: Int
        static let entityName = "Person"
        static let indexes = [IndexDefinition("byAge", [.descending("age")])]
    }
    struct UniqueCity: Entity {
        var id: Int64; var city: String; var age: Int
        static let entityName = "Person"
        static let indexes = [IndexDefinition("byCity", ["city"], unique: true)]
    }

    @Test func indexesAreBuiltRebuiltAndDropped() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            var store = try Store(path: path, entities: [PlainV1.self])
            try store.write { tx in
                for i in 1...30 { try tx.put(PlainV1(id: Int64(i), city: i % 2 == 0 ? "Oslo" : "Rome", age: (i * 7) % 50)) }
            }
            store.close()

            let progress = Protected<[Int]>([])
            var options = StoreOptions()
            options.indexBuildProgress = { _, done, total in progress.withLock { $0.append(done * 100 / max(1, total)) } }
            store = try Store(path: path, entities: [IndexedV2.self], options: options)
            let ascending = try store.read { try $0.query(IndexedV2.self, index: "byAge") }.map(\.age)
            #expect(ascending.count == 30 && ascending == ascending.sorted())
            #expect(progress.current.last == 100)
            #expect(try store.verify().isEmpty)
            store.close()

            store = try Store(path: path, entities: [ChangedV3.self])
            let descending = try store.read { try $0.query(ChangedV3.self, index: "byAge") }.map(\.age)
            #expect(descending == ascending.reversed())
            #expect(try store.verify().isEmpty)
            store.close()

            store = try Store(path: path, entities: [PlainV1.self])
            #expect(try store.catalog.entities["Person"]?.indexes.map(\.definition) == [.primaryKeyOrder])
            #expect(throws: FeedstoreError.unknownIndex(entity: "Person", index: "byAge", indexes: ["id"])) {
                try store.read { try $0.query(PlainV1.self, index: "byAge") }
            }
            #expect(try store.read { try $0.count(PlainV1.self) } == 30)
        }
    }

    @Test func aUniqueIndexThatExistingDataViolatesIsRefused() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            var store = try Store(path: path, entities: [PlainV1.self])
            try store.write { tx in for i in 1...4 { try tx.put(PlainV1(id: Int64(i), city: "Oslo", age: i)) } }
            let before = try store.catalog
            store.close()
            #expect { try Store(path: path, entities: [UniqueCity.self]) } throws: { error in
                if case FeedstoreError.uniqueViolation(entity: "Person", index: "byCity", _, _) = error { return true }
                return false
            }
            store = try Store(path: path, entities: [PlainV1.self])
            #expect(try store.catalog == before)
            #expect(try store.read { try $0.count(PlainV1.self) } == 4)
        }
    }

    struct MaybeCity: Entity { var id: Int64; var city: String?; var age: Int; static let entityName = "Person" }
    struct UniqueMaybeCity: Entity {
        var id: Int64; var city: String?; var age: Int
        static let entityName = "Person"
        static let indexes = [IndexDefinition("byCity", ["city"], unique: true)]
    }

    /// A unique index holds any number of entries whose key has a null, and refuses a repeated
    /// key otherwise, alike when it is built over existing records, when records are written,
    /// and when `verify` reads it.
    @Test func uniqueIndexesAdmitNullsAlikeWhenBuiltWrittenAndVerified() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            var store = try Store(path: path, entities: [MaybeCity.self])
            try store.write { tx in
                for i in 1...4 { try tx.put(MaybeCity(id: Int64(i), city: nil, age: i)) }
                try tx.put(MaybeCity(id: 5, city: "Oslo", age: 5))
            }
            store.close()
            store = try Store(path: path, entities: [UniqueMaybeCity.self])
            defer { store.close() }
            #expect(try store.read { try $0.query(UniqueMaybeCity.self, index: "byCity") }.count == 5, "the build admits the nulls")
            try store.write { tx in try tx.put(UniqueMaybeCity(id: 6, city: nil, age: 6)) }
            #expect(throws: FeedstoreError.self) { try store.write { tx in try tx.put(UniqueMaybeCity(id: 7, city: "Oslo", age: 7)) } }
            #expect(try store.verify().isEmpty, "verify admits the nulls too")
        }
    }

    @Test func everyDurabilityModeKeepsCommitsAcrossReopen() throws {
        for durability in Durability.allCases {
            try withTemporaryDirectory { dir in
                var store = try Store(path: dir + "/s", entities: [PlainV1.self], options: StoreOptions(durability: durability))
                try store.write { tx in try tx.put(PlainV1(id: 1, city: "Oslo", age: 3)) }
                store.close()
                store = try Store(path: dir + "/s", entities: [PlainV1.self], options: StoreOptions(readOnly: true))
                #expect(try store.read { try $0.get(PlainV1.self, id: 1) }?.city == "Oslo", "\(durability)")
                let mode = try FileManager.default.attributesOfItem(atPath: dir + "/s/data.mdb")[.posixPermissions] as? NSNumber
                #expect(mode?.intValue == 0o600)
            }
        }
    }
}
