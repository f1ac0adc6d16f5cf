@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Every entity's primary-key order (`index: "id"`): an entity that declares no index (the
/// demo's `Contact`) is counted, windowed and watched in the order of its ids, a declared index
/// cannot take the name, and a store written before the order existed gains it when a handle
/// opens it for writing (and is read as it is by a read-only one).
@Suite(.blocking) struct PrimaryKeyOrderTests {
    /// The ids in primary-key order, as a fresh read gives them.
    static func ids(_ store: Store) throws -> [UInt64] {
        try store.read { tx in try tx.query(Contact.self, index: "id").map(\.id) }
    }

    @Test(arguments: testSeeds(TestSize.choose(quick: 1, long: 4), base: 61))
    func anEntityWithoutIndexesIsCountedWindowedAndWatchedInIdOrder(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            var feed = DemoFeed(seed: seed)
            let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: 20, contacts: 60)
            defer { store.close() }
            #expect(try Self.ids(store) == Array(1...60), "seed \(seed)")
            #expect(try store.read { try $0.count(Query(Contact.primaryKeyOrder)) } == 60)
            #expect(try store.read { try $0.query(Contact.self, index: "id", offset: 10, limit: 5).map(\.id) } == Array(11...15))
            #expect(try store.read { try $0.position(of: 40 as UInt64, in: Query(Contact.primaryKeyOrder)) } == 39)

            // A window of the reversed order, watched with values and indexes only, while
            // contacts come and go.
            let query = Query(Contact.primaryKeyOrder, reverse: true)
            let window = WatchWindow(offset: 7, limit: 12)
            let watcher = store.watch(query, options: WatchOptions(window: window))
            let indexes = store.watchIndexes(entity: "Contact", index: "id", reverse: true, options: WatchOptions(window: window))
            var mirror = SectionedMirror<Contact>(), indexMirror = SectionedMirror<[String: FieldValue]>()
            var generator = SeededGenerator(seed: seed)
            var nextID: UInt64 = 61
            for commit in 0..<80 {
                if let batch = try watcher.poll() { try mirror.apply(batch) }
                if let batch = try indexes.poll() { try indexMirror.apply(batch, reading: indexes.object(at:)) }
                let all = try Self.ids(store)
                let shown = Array(all.reversed().dropFirst(window.offset).prefix(window.limit))
                #expect(mirror.sections.flatMap(\.rows).map(\.id) == shown, "seed \(seed) commit \(commit)")
                let records = try store.read { tx in
                    try tx.entries(entity: "Contact", index: "id", reverse: true, offset: window.offset, limit: window.limit)
                }
                #expect(records.map(\.id) == shown.map { FieldValue.uint($0) })
                #expect(indexMirror.sections.flatMap(\.rows) == records.map(\.record), "seed \(seed) commit \(commit), indexes only")
                #expect(mirror.sections.flatMap(\.rows) == (try store.read { tx in try shown.map { try tx.get(Contact.self, id: $0)! } }))
                try store.write { tx in
                    for _ in 0..<Int.random(in: 1...4, using: &generator) {
                        switch Int.random(in: 0..<3, using: &generator) {
                        case 0 where !all.isEmpty:
                            _ = try tx.delete(Contact.self, id: all.randomElement(using: &generator)!)
                        case 1 where !all.isEmpty:
                            try tx.put(Contact(id: all.randomElement(using: &generator)!, name: "renamed \(commit)"))
                        default:
                            try tx.insert(Contact(id: nextID, name: "new \(nextID)"))
                            nextID += UInt64.random(in: 1...3, using: &generator)
                        }
                    }
                }
            }
        }
    }

    @Test func aDeclaredIndexCannotTakeItsName() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s")
            defer { store.close() }
            #expect {
                try store.declare(entity: "Tag", primaryKeyKind: "string", indexes: [IndexDefinition("id", ["label"])])
            } throws: { error in
                "\(error)".contains("index Tag.id is invalid: id names every entity's primary-key order")
                    && "\(error)".contains("give the index another name")
            }
            try store.declare(entity: "Tag", primaryKeyKind: "string")
            #expect(try store.catalog.entities["Tag"]?.indexes.map(\.definition) == [.primaryKeyOrder])
        }
    }

    /// A store whose catalog lacks the order, as stores written before it do: the fixtures'.
    @Test(arguments: ["format-1-store", "format-2-store"])
    func aStoreWithoutTheOrderGainsItWhenOpenedForWriting(fixture: String) throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: packageRoot.appendingPathComponent("Tests/Fixtures/\(fixture)/data.mdb").path, toPath: path + "/data.mdb")
            // Format 1 needs an upgrade first, which a read-only handle refuses: read format 2 as it is.
            if fixture == "format-2-store" {
                let reader = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(readOnly: true))
                #expect(try reader.catalog.entities["Contact"]?.index(named: "id") == nil)
                #expect { try reader.read { try $0.count(Query(Contact.self, index: "id")) } } throws: {
                    "\($0)".contains("has no index named id")
                }
                reader.close()
            }
            let store = try Store(path: path, entities: DemoFeed.entities)
            defer { store.close() }
            let contacts = try store.read { try $0.entries(entity: "Contact", index: nil) }.map(\.id)
            #expect(!contacts.isEmpty)
            #expect(try Self.ids(store).map { FieldValue.uint($0) } == contacts)
            let messages = try store.read { try $0.count(entity: "Message") }
            #expect(try store.read { try $0.count(Query(Message.primaryKeyOrder)) } == messages)
            #expect(try store.verify().isEmpty)
        }
    }
}
