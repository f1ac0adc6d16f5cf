import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

@Suite(.blocking) struct StoreBasicsTests {
    let epoch = Date(timeIntervalSinceReferenceDate: 0)

    @Test func writesReadsAndQueriesTheDemoFeed() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities)
            let messages: [Message] = (1...6).map { (i: Int) -> Message in
                let date: Date = epoch.addingTimeInterval(Double(i))
                return Message(id: UInt64(i), folder: Int64(i % 2), date: date, title: "m\(i)", isRead: i % 3 == 0, contactId: 1)
            }
            try store.write { tx in for m in messages { try tx.insert(m) } }
            let got = try store.read { try $0.get(Message.self, id: 4) }
            #expect(got == messages[3])
            let folder1 = try store.read { try $0.query(Message.self, index: "byFolderDate", range: .prefix(1)) }
            #expect(folder1.map(\.id) == [5, 3, 1])
            let unread = try store.read { try $0.query(Message.self, index: "unreadByDate") }
            #expect(unread.map(\.id) == [5, 4, 2, 1])
            let page = try store.read { try $0.query(Message.self, index: "byFolderDate", offset: 1, limit: 2) }
            #expect(page.map(\.id) == [4, 2])
            #expect(try store.read { try $0.count(Message.self) } == 6)
            let bounds = try store.read { try $0.journalBounds() }
            #expect(bounds.last == 1)
            #expect(try store.verify().isEmpty)
            // The catalog records how ids are stored, for tools that parse them.
            #expect(try store.catalog.entities["Message"]?.primaryKeyKind == "uint")
            #expect(try store.catalog.entities["Message"]?.fields.map(\.name).sorted()
                == ["contactId", "date", "folder", "id", "isRead", "title"])
        }
    }

    /// Ids that ascend are appended to the records tree without a search; an id out of order,
    /// or equal to the last one, takes the searching path. Either way each id is stored once,
    /// a taken id is refused, and the indexes and counts follow.
    @Test func recordsInAnyIdOrderAreStoredOnce() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities)
            // Ascending ids, then lower ones, then a new last one, in one transaction.
            try store.write { tx in
                for id: UInt64 in [10, 20, 30, 5, 25, 40] { try tx.insert(numberedMessage(id)) }
            }
            // The last id again, and a lower taken one: refused, and the store is unchanged.
            for taken: UInt64 in [40, 20] {
                #expect(throws: FeedstoreError.self) { try store.write { tx in try tx.insert(numberedMessage(taken, title: "again\(taken)")) } }
            }
            #expect(try store.read { try $0.get(Message.self, id: 40)?.title } == "m40")
            // A put of the last id replaces it; later transactions append again.
            try store.write { tx in try tx.put(numberedMessage(40, title: "again40")) }
            try store.write { tx in for id: UInt64 in [50, 60] { try tx.insert(numberedMessage(id)) } }
            let stored = try store.read { try $0.entries(entity: "Message", index: nil) }
            #expect(stored.map(\.id) == [5, 10, 20, 25, 30, 40, 50, 60].map { FieldValue.uint($0) })
            #expect(try store.read { try $0.get(Message.self, id: 40)?.title } == "again40")
            #expect(try store.read { try $0.count(Message.self, index: "byFolderDate") } == 8)
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func verifyReportsProgressThroughEveryDatabase() throws {
        try withTemporaryDirectory { dir in
            let store = try populatedDemoStore(at: dir + "/s", seed: 2, messages: 20_000, contacts: 10)
            var finished: [String: Int] = [:]
            var steps = 0, overshoots = 0
            let issues = try store.verify { stage, done, total in
                steps += 1
                if done > total { overshoots += 1 }
                if done == total { finished[stage] = total }
            }
            #expect(issues.isEmpty && overshoots == 0)
            let unread = try store.read { try $0.count(Message.self, index: "unreadByDate") }
            #expect(finished["records:Message"] == 20_000 && finished["records:Contact"] == 10)
            #expect(finished["index:Message.byFolderDate"] == 20_000 && finished["index:Message.unreadByDate"] == unread)
            #expect(steps > finished.count, "intermediate steps are reported on large databases")
        }
    }

    @Test func storeFilesArePrivateUnlessConfigured() throws {
        try withTemporaryDirectory { dir in
            func mode(_ path: String) throws -> Int {
                try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
            }
            let store = try Store(path: dir + "/private", entities: DemoFeed.entities)
            store.close()
            #expect(try mode(dir + "/private/data.mdb") == 0o600)
            #expect(try mode(dir + "/private/lock.mdb") == 0o600)
            #expect(try mode(dir + "/private") & 0o077 == 0, "the directory is not readable by others")
            let shared = try Store(path: dir + "/shared", entities: DemoFeed.entities, options: StoreOptions(fileMode: 0o640))
            shared.close()
            #expect(try mode(dir + "/shared/data.mdb") == 0o640)
        }
    }

    /// Few fields with long or non-ASCII names: the catalog's list is scanned for them.
    struct Narrow: Entity, Equatable {
        var id: Int64
        var aFieldNameLongerThanFifteenBytes: String
        var größe: Int
        var n: Bool
        static let indexes = [IndexDefinition("byLong", [.ascending("aFieldNameLongerThanFifteenBytes")])]
    }

    /// More fields than are scanned: they are found by hashing.
    struct Wide: Entity, Equatable {
        var id: Int64
        var f01 = 1
        var f02 = 2
        var f03 = 3
        var f04 = 4
        var f05 = 5
        var f06 = 6
        var f07 = 7
        var f08 = 8
        var f09 = 9
        var f10 = 10
        var f11 = 11
        var f12 = 12
        var f13 = 13
        var f14 = 14
        var f15 = 15
        var f16 = 16
        var f17 = 17
        var f18 = 18
        var f19 = 19
        var theLastFieldHasALongName: String
        static let indexes = [IndexDefinition("byLast", [.descending("theLastFieldHasALongName")])]
    }

    /// Records are stored, read back, indexed and journaled field by field, whichever way their
    /// fields are found in the catalog (scanned or hashed, short or long names, non-ASCII ones).
    @Test func fieldsAreFoundByNameInNarrowAndWideEntities() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Narrow.self, Wide.self])
            let narrow = (1...5).map { Narrow(id: $0, aFieldNameLongerThanFifteenBytes: "v\(6 - $0)", größe: Int($0) * 10, n: $0 % 2 == 0) }
            let wide = (1...5).map { Wide(id: $0, f07: Int($0), theLastFieldHasALongName: "w\($0)") }
            try store.write { tx in
                for record in narrow { try tx.insert(record) }
                for record in wide { try tx.insert(record) }
            }
            try store.write { tx in
                var n = narrow[0]
                n.größe = 99
                try tx.put(n)
                var w = wide[0]
                w.f13 = -1
                try tx.put(w)
            }
            try store.read { tx in
                #expect(try tx.get(Narrow.self, id: 1)?.größe == 99)
                #expect(try tx.get(Narrow.self, id: 2) == narrow[1])
                #expect(try tx.get(Wide.self, id: 1)?.f13 == -1)
                #expect(try tx.get(Wide.self, id: 3) == wide[2])
                #expect(try tx.query(Narrow.self, index: "byLong").map(\.id) == [5, 4, 3, 2, 1])
                #expect(try tx.query(Wide.self, index: "byLast").map(\.id) == [5, 4, 3, 2, 1])
                let updates = try tx.journal(after: 1)[0].entries
                #expect(updates.map(\.changedFields) == [["größe"], ["f13"]])
            }
            #expect(try store.verify().isEmpty)
        }
    }

    /// The async read runs its transaction off the caller's actor and returns the snapshot's values;
    /// errors arrive typed, and a closed store refuses it.
    @Test func asyncReadsRunOffTheCallingActor() async throws {
        try await withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Message.self, Contact.self])
            try await store.write { tx in try tx.put(Contact(id: 1, name: "Ada")) }
            let (name, onMain) = try await Task { @MainActor in
                try await store.read { tx in (try tx.get(Contact.self, id: 1)?.name, Thread.isMainThread) }
            }.value
            #expect(name == "Ada" && !onMain)
            await #expect(throws: FeedstoreError.unknownIndex(entity: "Contact", index: "nope", indexes: ["id"])) {
                try await store.read { tx in try tx.count(Contact.self, index: "nope") }
            }
            store.close()
            await #expect(throws: FeedstoreError.storeClosed(path: store.path)) { try await store.read { _ in 1 } }
        }
    }
}
