@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Format 3: every store has an identifier, and a store can keep, in each journal entry, the
/// record after the change, so that a reader of an old commit sees that commit's record and not
/// today's.
@Suite(.blocking) struct RecordImageTests {
    static func item(_ id: Int64, name: String) -> Item {
        Item(id: id, group: id % 3, score: Double(id) / 4, name: name, flag: id % 2 == 0, tag: id % 5 == 0 ? nil : UUID())
    }

    @Test func everyStoreHasAnIdentifierThatReopeningKeeps() throws {
        try withTemporaryDirectory { dir in
            let first = try Store(path: dir + "/a", entities: [Item.self], options: StoreOptions(durability: .none))
            let id = try first.read { try $0.storeIdentifier() }
            #expect(id != nil)
            first.close()
            let again = try Store(path: dir + "/a", entities: [Item.self], options: StoreOptions(durability: .none, readOnly: true))
            #expect(try again.read { try $0.storeIdentifier() } == id)
            #expect(try again.inspect().formatVersion == Catalog.currentFormatVersion)
            again.close()
            let other = try Store(path: dir + "/b", entities: [Item.self], options: StoreOptions(durability: .none))
            #expect(try other.read { try $0.storeIdentifier() } != id)
            other.close()
        }
    }

    /// A format 2 store (no identifier) opens read-only as it is, and gets an identifier and
    /// format 3 when first opened for writing.
    @Test func formatTwoStoresGetAnIdentifierWhenOpenedForWriting() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try Store(path: path, entities: [Item.self], options: StoreOptions(durability: .none))
            try store.write { try $0.put(Self.item(1, name: "one")) }
            store.close()
            try rewriteAsFormatTwo(path)
            let reader = try Store(path: path, entities: [Item.self], options: StoreOptions(durability: .none, readOnly: true))
            #expect(try reader.read { try $0.storeIdentifier() } == nil)
            #expect(try reader.inspect().formatVersion == 2)
            #expect(try reader.read { try $0.get(Item.self, id: 1)?.name } == "one")
            reader.close()
            let writer = try Store(path: path, entities: [Item.self], options: StoreOptions(durability: .none))
            #expect(try writer.read { try $0.storeIdentifier() } != nil)
            #expect(try writer.inspect().formatVersion == Catalog.currentFormatVersion)
            #expect(try writer.verify().isEmpty)
            writer.close()
        }
    }

    func rewriteAsFormatTwo(_ path: String) throws {
        let env = try LMDBEnvironment(path: path, flags: [], mapSize: 64 << 20, maxDatabases: 126, maxReaders: 8, mode: 0o600)
        defer { env.close() }
        let txn = try LMDBTransaction(environment: env, readOnly: false)
        let meta = try txn.openDatabase(named: SystemDatabases.metaName, create: false)!
        #expect(try txn.delete(meta, key: MetaKey.storeIdentifier))
        try txn.put(meta, key: MetaKey.format, value: [0, 0, 0, 2])
        var catalog = try Catalog.decode(try txn.get(meta, key: MetaKey.catalog)!)
        catalog.formatVersion = 2
        try txn.put(meta, key: MetaKey.catalog, value: catalog.encoded())
        try txn.commit()
    }

    /// Seeded random writes; each write that changes a record is followed by reading the record
    /// back inside its transaction. Entries of commits from the start on carry exactly those
    /// records, in write order; earlier ones carry none.
    @Test(arguments: testSeeds(2))
    func entriesCarryTheRecordAsTheirCommitLeftIt(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            // Per commit, each change's record and its fields after it (nil once deleted).
            var expected: [UInt64: [(id: FieldValue, record: [String: FieldValue]?)]] = [:]
            var start: UInt64?
            for step in 0..<120 {
                if step == 30 {
                    start = try store.write { try $0.keepRecordImagesInJournal() }
                    #expect(try store.write { try $0.keepRecordImagesInJournal() } == start, "seed \(seed)")
                }
                var changes: [(id: FieldValue, record: [String: FieldValue]?)] = []
                let sequence = try store.write { tx -> UInt64? in
                    for _ in 0..<Int.random(in: 1...4, using: &rng) {
                        let id = Int64.random(in: 1...20, using: &rng)
                        let before = try tx.record(entity: "Item", id: .int(id))
                        if Int.random(in: 0..<4, using: &rng) == 0 {
                            try tx.delete(Item.self, id: id)
                        } else {
                            try tx.put(Self.item(id, name: "n\(id).\(Int.random(in: 0..<6, using: &rng))"))
                        }
                        let after = try tx.record(entity: "Item", id: .int(id))
                        if after != before { changes.append((.int(id), after)) }
                    }
                    return tx.commitSequence
                }
                if let sequence { expected[sequence] = changes }
            }
            var ordinals: [UInt64: Int] = [:]
            let check = { (entry: JournalEntry) in
                let ordinal = ordinals[entry.sequence, default: 0]
                ordinals[entry.sequence] = ordinal + 1
                guard let changes = expected[entry.sequence], ordinal < changes.count else {
                    Issue.record("commit \(entry.sequence) has more entries than changes, seed \(seed)")
                    return
                }
                #expect(entry.id == changes[ordinal].id, "seed \(seed)")
                if let start, entry.sequence >= start, entry.kind != .delete {
                    #expect(entry.record != nil && entry.record == changes[ordinal].record,
                            "commit \(entry.sequence), record \(entry.id), seed \(seed)")
                } else {
                    #expect(entry.record == nil, "commit \(entry.sequence), seed \(seed)")
                }
            }
            let commits = try store.read { try $0.journal(after: 0, limit: 1_000) }
            #expect(commits.count == expected.count)
            for commit in commits { commit.entries.forEach(check) }
            ordinals = [:]
            var walked = 0
            try store.read { tx in
                try tx.forEachJournalEntry(after: 0) { entry, _ in
                    check(entry)
                    walked += 1
                    return true
                }
            }
            #expect(walked == commits.map(\.entries.count).reduce(0, +))
            #expect(try store.verify().isEmpty, "seed \(seed)")
            store.close()
            let reopened = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            #expect(try reopened.read { try $0.recordImagesStart() } == start)
            let next = try reopened.write { tx -> UInt64? in
                try tx.put(Self.item(99, name: "after reopening"))
                return tx.commitSequence
            }
            let entry = try reopened.read { try $0.journal(after: next! - 1).first?.entries.first }
            #expect(entry?.record?["name"] == .string("after reopening"))
            reopened.close()
        }
    }
}
