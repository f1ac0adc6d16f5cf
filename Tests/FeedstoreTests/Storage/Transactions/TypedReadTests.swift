import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Typed reads keep what they decode apart: a transaction decodes records' top levels through
/// containers it keeps per coding-key type, and resolves each query's range once. These tests
/// mix entity types, key types, failures and nested reads in one transaction, and read through
/// write transactions whose counts change between reads.
@Suite(.blocking) struct TypedReadTests {
    @Test func recordsOfSeveralTypesDecodeInTurnInOneTransaction() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities + [TwoKeyed.self])
            let messages = (1...20).map { numberedMessage($0) }
            let contacts = (0...2).map { Contact(id: $0, name: "c\($0)") }
            let twoKeyed = (1...5).map { TwoKeyed(id: $0, name: "t\($0)", extra: Int64($0) * 10) }
            try store.write { tx throws in
                for m in messages { try tx.insert(m) }
                for c in contacts { try tx.insert(c) }
                for t in twoKeyed { try tx.insert(t) }
            }
            try store.read { tx throws in
                for m in messages {
                    #expect(try tx.get(Message.self, id: m.id) == m)
                    #expect(try tx.get(Contact.self, id: m.contactId) == contacts[Int(m.contactId)])
                    let t = twoKeyed[Int(m.id) % twoKeyed.count]
                    #expect(try tx.get(TwoKeyed.self, id: t.id) == t)
                }
                #expect(try tx.query(Message.self, index: "byFolderDate") == messages.reversed())
            }
        }
    }

    /// A decode that fails leaves nothing behind: the records after it decode as they should.
    @Test func aFailedDecodeDoesNotAffectTheNext() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities)
            try store.write { tx in for id: UInt64 in 1...6 { try tx.insert(numberedMessage(id, title: id == 3 ? "" : nil)) } }
            try store.read { tx throws in
                for id: UInt64 in 1...6 {
                    if id == 3 {
                        #expect(throws: FeedstoreError.self) { try tx.get(NonEmptyTitle.self, id: id) }
                    } else {
                        #expect(try tx.get(NonEmptyTitle.self, id: id)?.title == "m\(id)")
                    }
                    #expect(try tx.get(Message.self, id: id) == numberedMessage(id, title: id == 3 ? "" : nil))
                }
            }
        }
    }

    /// A read made while a record is being decoded (from a custom `init(from:)`) decodes on its
    /// own, and the outer decode goes on reading its own record.
    @Test func aReadInsideADecodeReadsItsOwnRecord() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities)
            try store.write { tx throws in
                for id: UInt64 in 1...4 { try tx.insert(numberedMessage(id)) }
                for id: UInt64 in 0...2 { try tx.insert(Contact(id: id, name: "c\(id)")) }
            }
            try store.read { tx throws in
                for id: UInt64 in 1...4 {
                    let found = try MessageWithSender.reading(in: tx) { try tx.get(MessageWithSender.self, id: id) }
                    #expect(found?.title == "m\(id)")
                    #expect(found?.sender == "c\(id % 3)")
                    #expect(found?.isRead == (id % 2 == 0))
                }
            }
        }
    }

    /// A read transaction keeps the count-tree nodes it reads: positions, ranks and counts read
    /// through the kept nodes, in random order and over two indexes in turns, agree with the
    /// indexes' order as a scan reads it.
    @Test(arguments: testSeeds(1, base: 90))
    func positionsReadThroughKeptNodesAgreeWithAScan(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities, options: StoreOptions(durability: .none))
            var feed = DemoFeed(seed: seed)
            // Enough entries for a root and a dozen nodes below it.
            try feed.populate(store, messages: 24_000, contacts: 10)
            var rng = SeededGenerator(seed: seed)
            let queries = [Query(Message.self, index: "byFolderDate"), Query(Message.self, index: "byFolderDate", range: .prefix(2)),
                           Query(Message.self, index: "unreadByDate"), Query(Message.self, index: "byFolderDate", reverse: true)]
            // Scanned in transactions of their own, which keep nothing for the reads below.
            let scans = try queries.map { query in try store.read { try $0.objects(in: query) } }
            try store.read { tx throws in
                #expect(try tx.indexHeight(entity: "Message", index: "byFolderDate") >= 2, "the tree must have nodes below its root")
                let reads = (0..<8_000).map { i in (i % queries.count, Int.random(in: 0..<scans[i % queries.count].count, using: &rng)) }
                for (q, position) in reads {
                    let expected = scans[q][position]
                    #expect(try tx.object(at: position, in: queries[q]) == expected, "seed \(seed): \(queries[q]) at \(position)")
                    #expect(try tx.position(of: expected.id, in: queries[q]) == position, "seed \(seed): \(queries[q]) id \(expected.id)")
                }
                for (q, query) in queries.enumerated() { #expect(try tx.count(query) == scans[q].count) }
            }
        }
    }

    /// Positions read in a write transaction follow its own changes (its counts change, so it
    /// keeps no resolved ranges); a read transaction's answers agree with a fresh query.
    @Test func positionsFollowChangesInAWriteTransaction() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities)
            let folder = Query(Message.self, index: "byFolderDate", range: .prefix(1))
            try store.write { tx throws in
                for id: UInt64 in 1...10 { try tx.insert(numberedMessage(id)) }
                #expect(try tx.count(folder) == 10)
                #expect(try tx.object(at: 0, in: folder)?.id == 10)
                try tx.insert(numberedMessage(11))
                try tx.insert(numberedMessage(12, folder: 2))
                #expect(try tx.count(folder) == 11)
                #expect(try tx.object(at: 0, in: folder)?.id == 11)
                #expect(try tx.object(at: 10, in: folder)?.id == 1)
                _ = try tx.delete(Message.self, id: 11)
                #expect(try tx.object(at: 0, in: folder)?.id == 10)
                #expect(try tx.object(at: 10, in: folder) == nil)
            }
            try store.read { tx throws in
                let all = try tx.query(Message.self, index: "byFolderDate", range: .prefix(1))
                for sections in 0..<3 {
                    // Queries read in turns, more than a transaction keeps resolved at once.
                    for (position, expected) in all.enumerated() {
                        #expect(try tx.object(at: position, in: folder) == expected)
                        let other = Query(Message.self, index: "byFolderDate", range: .prefix(.int(Int64(2 + sections))))
                        #expect(try tx.object(at: 0, in: other)?.folder == (sections == 0 ? 2 : nil))
                        #expect(try tx.object(at: all.count - 1 - position, in: Query(Message.self, index: "byFolderDate",
                                                                                    range: .prefix(1), reverse: true)) == expected)
                    }
                }
            }
        }
    }
}

/// A type whose `init(from:)` reads its top level through two key types.
struct TwoKeyed: Entity, Equatable {
    var id: UInt64
    var name: String
    var extra: Int64

    enum CodingKeys: String, CodingKey { case id, name }
    enum ExtraKeys: String, CodingKey { case extra }

    init(id: UInt64, name: String, extra: Int64) {
        self.id = id
        self.name = name
        self.extra = extra
    }

    init(from decoder: any Decoder) throws {
        let main = try decoder.container(keyedBy: CodingKeys.self)
        let more = try decoder.container(keyedBy: ExtraKeys.self)
        extra = try more.decode(Int64.self, forKey: .extra)
        id = try main.decode(UInt64.self, forKey: .id)
        name = try main.decode(String.self, forKey: .name)
    }

    func encode(to encoder: any Encoder) throws {
        var main = encoder.container(keyedBy: CodingKeys.self)
        try main.encode(id, forKey: .id)
        try main.encode(name, forKey: .name)
        var more = encoder.container(keyedBy: ExtraKeys.self)
        try more.encode(extra, forKey: .extra)
    }

    static let fieldNames: [String]? = ["id", "name", "extra"]
}

/// A demo message read by a type that refuses an empty title.
struct NonEmptyTitle: Entity {
    static let entityName = "Message"
    var id: UInt64
    var title: String

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(UInt64.self, forKey: .id)
        title = try c.decode(String.self, forKey: .title)
        if title.isEmpty { throw DecodingError.dataCorruptedError(forKey: .title, in: c, debugDescription: "empty title") }
    }

    static let fieldNames: [String]? = ["id", "title"]
}

/// A demo message that reads its sender's name from the same transaction while it decodes.
struct MessageWithSender: Entity {
    static let entityName = "Message"
    var id: UInt64
    var title: String
    var isRead: Bool
    var sender: String

    enum CodingKeys: String, CodingKey { case id, title, isRead, contactId }

    nonisolated(unsafe) private static var transaction: ReadTransaction?

    static func reading<R>(in tx: ReadTransaction, _ body: () throws -> R) rethrows -> R {
        transaction = tx
        defer { transaction = nil }
        return try body()
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(UInt64.self, forKey: .id)
        let contact = try c.decode(UInt64.self, forKey: .contactId)
        // Another record decoded in the middle of this one.
        sender = try Self.transaction?.get(Contact.self, id: contact)?.name ?? "?"
        title = try c.decode(String.self, forKey: .title)
        isRead = try c.decode(Bool.self, forKey: .isRead)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(title, forKey: .title)
        try c.encode(isRead, forKey: .isRead)
    }

    static let fieldNames: [String]? = ["id", "title", "isRead", "contactId"]
}
