@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Every place a field name appears is checked against the entity's fields: index components,
/// partial-index conditions, watch options' fields and related records. A wrong name is a typed
/// error naming it and listing the fields, never an index of nulls or a filter that never matches.
@Suite(.blocking) struct FieldNameTests {
    struct Address: Codable, Sendable { var city: String; var zip: String? }
    enum Kind: String, Codable, Sendable, CaseIterable { case person, company }
    enum Unlisted: String, Codable, Sendable { case a, b }

    struct Person: Entity {
        var id: Int64
        var name: String
        var born: Date
        var tag: UUID?
        var kind: Kind
        var home: Address
        var aliases: [String]
        var extra: [String: Int]
        var note: FieldValue?
        enum CodingKeys: String, CodingKey { case id, name, born, tag, kind, home, aliases, extra, note = "remark" }
    }

    /// Discovery stops at an enum it cannot make up: the fields before it are known.
    struct Partial: Entity { var id: Int64; var before: Int; var choice: Unlisted; var after: Int }

    @Test func theFieldsOfACodableTypeAreLearnedFromItsDecoder() {
        let fields = DeclaredFields.of(Person.self)
        #expect(fields.isComplete)
        #expect(fields.topLevel == ["aliases", "born", "extra", "home", "id", "kind", "name", "remark", "tag"])
        #expect(fields.contains("home.city") && fields.contains("home.zip"))
        #expect(!fields.contains("home.town") && !fields.contains("note") && !fields.contains("aliases.first"))
        // A dictionary and a dynamic value may hold any member.
        #expect(fields.contains("extra.anything") && fields.contains("remark.any.depth"))
        // The stored form keeps the names; the kinds are stored beside it.
        let reread = DeclaredFields(stored: fields.stored)
        #expect(reread.paths == fields.paths && reread.openPaths == fields.openPaths)
        #expect(fields.kinds["home.zip"] == "string?" && fields.kinds["remark"] == "any?" && fields.kinds["born"] == "date")

        // A record read through allKeys may hold any field.
        let open = DeclaredFields.of([String: Int].self)
        #expect(open.isComplete && open.contains("anything") && open.contains("any.depth"))
        #expect(DeclaredFields(stored: open.stored).openPaths == open.openPaths)

        let partial = DeclaredFields.of(Partial.self)
        #expect(!partial.isComplete)
        #expect(partial.paths == ["id", "before", "choice"])
    }

    struct Misspelled: Entity {
        var id: Int64; var folder: Int; var date: Date
        static let entityName = "Mail"
        static let indexes = [IndexDefinition("byFolder", ["foldr", "date"])]
    }

    struct BadCondition: Entity {
        var id: Int64; var folder: Int; var isRead: Bool
        static let entityName = "Mail"
        static let indexes = [IndexDefinition("unread", ["folder"], where: .field("folder") > 0 && .field("read") == false)]
    }

    struct Nested: Entity {
        var id: Int64; var home: Address
        static let indexes = [IndexDefinition("byCity", ["home.city"])]
    }

    struct NestedTypo: Entity {
        var id: Int64; var home: Address
        static let entityName = "Nested"
        static let indexes = [IndexDefinition("byCity", ["home.ctiy"])]
    }

    /// A type whose decoder reads less than it encodes declares its fields.
    struct Declared: Entity {
        var id: Int64
        var score: Int
        static let fieldNames: [String]? = ["id", "score"]
        static let indexes = [IndexDefinition("byScore", ["score"])]
        enum CodingKeys: String, CodingKey { case id, score }
        init(id: Int64, score: Int) { self.id = id; self.score = score }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            self.init(id: try c.decode(Int64.self, forKey: .id), score: try c.decodeIfPresent(Int.self, forKey: .score) ?? 0)
        }
    }

    struct DeclaredTypo: Entity {
        var id: Int64
        static let entityName = "Declared"
        static let fieldNames: [String]? = ["id", "score"]
        static let indexes = [IndexDefinition("byScore", ["scor"])]
    }

    @Test func declaredFieldNamesReplaceTheLearnedOnes() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Declared.self])
            try store.write { tx in try tx.put(Declared(id: 1, score: 5)) }
            #expect(try store.read { try $0.count(Declared.self, index: "byScore", range: .prefix(.int(5))) } == 1)
            #expect(try store.catalog.entities["Declared"]?.declaredFields == ["id", "score"])
            store.close()
            #expect {
                _ = try Store(path: dir + "/s", entities: [DeclaredTypo.self])
            } throws: { error in
                guard case let FeedstoreError.unknownField("Declared", "scor", _, fields) = error else { return false }
                return fields == ["id", "score"]
            }
        }
    }

    @Test func anIndexOnAFieldTheTypeDoesNotHaveIsRefusedWhenTheStoreOpens() throws {
        try withTemporaryDirectory { dir in
            #expect {
                _ = try Store(path: dir + "/a", entities: [Misspelled.self])
            } throws: { error in
                guard case let FeedstoreError.unknownField(entity, field, usedBy, fields) = error else { return false }
                return entity == "Mail" && field == "foldr" && usedBy == "index Mail.byFolder" && fields == ["date", "folder", "id"]
                    && (error as? LocalizedError)?.errorDescription?.contains("\"foldr\"") == true
            }
            #expect {
                _ = try Store(path: dir + "/b", entities: [BadCondition.self])
            } throws: { error in
                guard case let FeedstoreError.unknownField(_, field, usedBy, _) = error else { return false }
                return field == "read" && usedBy == "the condition of index Mail.unread"
            }
            let store = try Store(path: dir + "/c", entities: [Nested.self])
            store.close()
            #expect {
                _ = try Store(path: dir + "/c", entities: [NestedTypo.self])
            } throws: { error in
                guard case let FeedstoreError.unknownField(_, field, _, _) = error else { return false }
                return field == "home.ctiy"
            }
            // The refused declaration changed nothing: the store still opens with its index.
            let reopened = try Store(path: dir + "/c", entities: [Nested.self])
            #expect(try reopened.read { try $0.entity("Nested").index(named: "byCity") }.definition.components == ["home.city"])
        }
    }

    @Test func watchOptionsNamingNoFieldIndexOrEntityAreRefusedByTheFirstPoll() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities)
            var feed = DemoFeed(seed: 3)
            try feed.populate(store, messages: 50, contacts: 5)
            let inbox = Query(Message.self, index: "byFolderDate", range: .prefix(.int(1)))

            func isUnknownField(_ error: any Error, _ name: String) -> Bool {
                guard case let FeedstoreError.unknownField("Message", field, "the watch options' fields", fields) = error else { return false }
                return field == name && fields.contains("isRead")
            }
            let typos = WatchOptions(fields: ["isRead", "titel"])
            #expect { _ = try store.watch(inbox, options: typos).poll() } throws: { isUnknownField($0, "titel") }
            #expect { _ = try store.watchIndexes(inbox, options: typos).poll() } throws: { isUnknownField($0, "titel") }
            #expect {
                _ = try store.watch(entity: "Message", index: "byFolderDate", options: typos).poll()
            } throws: { isUnknownField($0, "titel") }

            let wrongIndex = WatchOptions(related: [RelatedRecords(Contact.self, through: "byContcat")])
            #expect { _ = try store.watch(inbox, options: wrongIndex).poll() } throws: { error in
                if case FeedstoreError.unknownIndex("Message", "byContcat", _) = error { return true }
                return false
            }
            let unregistered = WatchOptions(related: [RelatedRecords(Person.self, through: "byContact")])
            #expect { _ = try store.watch(inbox, options: unregistered).poll() } throws: { error in
                if case FeedstoreError.unknownEntity("Person", _) = error { return true }
                return false
            }
            // Correct names watch as before.
            let batch = try store.watch(inbox, options: WatchOptions(fields: ["isRead", "title"],
                                                                     related: [RelatedRecords(Contact.self, through: "byContact")])).poll()
            #expect(batch?.isInitial == true)
        }
    }
}
