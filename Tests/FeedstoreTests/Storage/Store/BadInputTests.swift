@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Every kind of bad input gives a typed error and leaves the store exactly as it was.
@Suite(.blocking) struct BadInputTests {
    /// A fingerprint of everything readable: records of both entities, journal head, issues.
    func snapshot(_ store: Store) throws -> String {
        try store.read { tx in
            let items = try tx.entries(entity: "Item", index: nil).map { "\($0.id)=\(FieldValue.object($0.record))" }
            let names = try tx.entries(entity: "Item", index: "byName").map { "\($0.key)" }
            return "\(items)|\(names)|\(try tx.journalBounds())"
        } + "\(try store.verify())"
    }

    func seeded(_ dir: String) throws -> Store {
        let store = try Store(path: dir + "/s", entities: [Item.self, Note.self])
        try store.write { tx in
            for i in 1...5 { try tx.put(Item(id: Int64(i), group: 1, score: Double(i), name: "n\(i)", flag: true, tag: nil)) }
        }
        return store
    }

    @Test func oversizeKeysAreRefusedAndNothingIsWritten() throws {
        try withTemporaryDirectory { dir in
            let store = try seeded(dir)
            let before = try snapshot(store)
            let long = String(repeating: "x", count: 600)
            #expect {
                try store.write { tx in
                    try tx.put(Item(id: 10, group: 1, score: 0, name: "fine", flag: false, tag: nil))
                    try tx.put(Item(id: 11, group: 1, score: 0, name: long, flag: false, tag: nil))
                }
            } throws: { error in
                guard case let FeedstoreError.keyTooLarge(entity, index, size, limit) = error else { return false }
                return entity == "Item" && index == "byName" && size > limit && "\(error)".contains("Item.byName")
            }
            #expect {
                try store.write { tx in try tx.put(Note(id: long, body: "", priority: 0, when: Date(), labels: [])) }
            } throws: { error in
                if case FeedstoreError.keyTooLarge(entity: "Note", index: nil, _, _) = error { return true }
                return false
            }
            #expect(try snapshot(store) == before)
        }
    }

    /// A closure may catch a refused write and go on ("insert unless taken"). The refused write
    /// must leave nothing behind in the transaction: no record without its index entries, no
    /// entry in one index but not the next, and nothing carried into the writes after it.
    @Test func aRefusedWriteCaughtInsideTheTransactionLeavesNothingBehind() throws {
        try withTemporaryDirectory { dir in
            let store = try seeded(dir)
            let long = String(repeating: "x", count: 600)
            let kept = Item(id: 32, group: 3, score: 7, name: "kept", flag: true, tag: UUID())
            let moved = Item(id: 2, group: 2, score: 2, name: "n2 renamed", flag: true, tag: nil)
            try store.write { tx in
                // New records: refused by the second index (unique), by its key size, and by id.
                #expect(throws: FeedstoreError.self) { try tx.insert(Item(id: 30, group: 1, score: 0, name: "n2", flag: true, tag: nil)) }
                #expect(throws: FeedstoreError.self) { try tx.put(Item(id: 31, group: 2, score: 0, name: long, flag: true, tag: nil)) }
                #expect(throws: FeedstoreError.self) { try tx.insert(Item(id: 1, group: 9, score: 9, name: "other", flag: false, tag: nil)) }
                // Existing records: an update and an upsert that would take another record's name.
                #expect(throws: FeedstoreError.self) { try tx.update(Item(id: 3, group: 2, score: 3, name: "n4", flag: true, tag: nil)) }
                #expect(throws: FeedstoreError.self) { try tx.put(Item(id: 4, group: 2, score: 4, name: "n5", flag: true, tag: nil)) }
                try tx.insert(kept)
                try tx.update(moved)
            }
            #expect(try store.verify().isEmpty)
            let expected = (1...5).map { Item(id: Int64($0), group: 1, score: Double($0), name: "n\($0)", flag: true, tag: nil) }
                .map { $0.id == 2 ? moved : $0 } + [kept]
            try store.read { tx in
                let stored = try tx.entries(entity: "Item", index: nil).map { FieldValue.object($0.record) }
                #expect(stored == expected.map { FieldValue.object($0.fields.filter { $0.value != .null }) })
                let names = try tx.entries(entity: "Item", index: "byName").map { $0.record["name"] }
                #expect(names == expected.map(\.name).sorted().map { FieldValue.string($0) })
                #expect(try tx.count(Item.self, index: "byGroupScore") == expected.count)
                #expect(try tx.count(Item.self, index: "flagged") == 2)
                let commit = try #require(try tx.journal(after: 1).first)
                #expect(commit.entries.map(\.kind) == [.insert, .update])
            }
        }
    }

    @Test func uniqueViolationNamesIndexKeyAndRollsBackTheTransaction() throws {
        try withTemporaryDirectory { dir in
            let store = try seeded(dir)
            let before = try snapshot(store)
            #expect {
                try store.write { tx in
                    try tx.delete(Item.self, id: 1)
                    try tx.put(Item(id: 20, group: 2, score: 1, name: "n3", flag: false, tag: nil))
                }
            } throws: { error in
                guard case let FeedstoreError.uniqueViolation(entity, index, key, existing) = error else { return false }
                return entity == "Item" && index == "byName" && key == ["n3"] && existing == .int(3)
            }
            #expect(try snapshot(store) == before)
            // Canonically equal names collide too.
            try store.write { tx in try tx.put(Item(id: 30, group: 2, score: 1, name: "caf\u{E9}", flag: false, tag: nil)) }
            #expect(throws: FeedstoreError.self) {
                try store.write { tx in try tx.put(Item(id: 31, group: 2, score: 1, name: "cafe\u{301}", flag: false, tag: nil)) }
            }
        }
    }

    @Test func corruptRecordBytesAreATypedErrorAndOtherRecordsStayReadable() throws {
        try withTemporaryDirectory { dir in
            let store = try seeded(dir)
            // Damage record 2 behind the store's back, through the LMDB layer.
            let entity = try store.core.schema.entity("Item")
            try store.core.mapLock.withShared {
                let txn = try LMDBTransaction(environment: store.core.environment, readOnly: false)
                try txn.put(entity.records, key: KeyEncoding.encode([.int(2)]), value: [RecordCodec.formatByte, 9, 1, 0xEE])
                try txn.commit()
            }
            #expect {
                try store.read { try $0.get(Item.self, id: 2) }
            } throws: { error in
                if case let FeedstoreError.corruptData(what, _) = error { return what.contains("Item") }
                return false
            }
            #expect(try store.read { try $0.get(Item.self, id: 3) }?.name == "n3")
            let issues = try store.verify()
            #expect(issues.contains { $0.location == "records:Item" })
            // Writing over the damaged record is refused (its old index entries cannot be found).
            #expect(throws: FeedstoreError.self) {
                try store.write { tx in try tx.put(Item(id: 2, group: 1, score: 2, name: "n2", flag: true, tag: nil)) }
            }
        }
    }

    @Test func directoriesAndFilesThatAreNotStoresAreRefusedUntouched() throws {
        try withTemporaryDirectory { dir in
            let fm = FileManager.default
            // A non-empty directory without a store.
            try fm.createDirectory(atPath: dir + "/photos", withIntermediateDirectories: false)
            try Data("keep me".utf8).write(to: URL(fileURLWithPath: dir + "/photos/a.jpg"))
            #expect { try Store(path: dir + "/photos") } throws: { error in
                if case FeedstoreError.notAStore = error { return "\(error)".contains("not empty") }
                return false
            }
            #expect(try fm.contentsOfDirectory(atPath: dir + "/photos") == ["a.jpg"])
            // A plain file.
            try Data("text".utf8).write(to: URL(fileURLWithPath: dir + "/file"))
            #expect { try Store(path: dir + "/file") } throws: { error in
                if case FeedstoreError.notAStore = error { return true }
                return false
            }
            // A data.mdb that is not LMDB at all.
            try fm.createDirectory(atPath: dir + "/garbage", withIntermediateDirectories: false)
            let junk = Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try junk.write(to: URL(fileURLWithPath: dir + "/garbage/data.mdb"))
            #expect { try Store(path: dir + "/garbage") } throws: { error in
                if case FeedstoreError.notAStore = error { return true }
                return false
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir + "/garbage/data.mdb")) == junk)
            // A missing path opened read-only.
            #expect(throws: FeedstoreError.self) { try Store(path: dir + "/missing", options: StoreOptions(readOnly: true)) }
        }
    }

    @Test func aTruncatedDataFileIsRefusedNotACrash() throws {
        try withTemporaryDirectory { dir in
            let store = try seeded(dir)
            try store.write { tx in
                for i in 100..<2_000 { try tx.put(Item(id: Int64(i), group: 1, score: 0, name: "x\(i)", flag: false, tag: nil)) }
            }
            store.close()
            let file = dir + "/s/data.mdb"
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber).intValue
            let handle = try #require(FileHandle(forWritingAtPath: file))
            try handle.truncate(atOffset: UInt64(size / 3))
            try handle.close()
            #expect { try Store(path: dir + "/s", entities: [Item.self]) } throws: { error in
                if case FeedstoreError.notAStore = error { return "\(error)".contains("truncated") }
                return false
            }
            #expect { try Store(path: dir + "/s", options: StoreOptions(readOnly: true)) } throws: { error in
                if case FeedstoreError.notAStore = error { return true }
                return false
            }
            // Refusing it changed nothing.
            #expect(try FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber == NSNumber(value: size / 3))
        }
    }

    @Test func aForeignLMDBEnvironmentIsRefusedUntouched() throws {
        try withTemporaryDirectory { dir in
            try FileManager.default.createDirectory(atPath: dir + "/foreign", withIntermediateDirectories: false)
            let env = try LMDBEnvironment(path: dir + "/foreign", flags: [], mapSize: 1 << 20, maxDatabases: 4, maxReaders: 8, mode: 0o600)
            let txn = try LMDBTransaction(environment: env, readOnly: false)
            let main = try txn.openDatabase(named: "", create: false)!
            try txn.put(main, key: Array("hello".utf8), value: Array("world".utf8))
            try txn.commit()
            env.close()
            #expect { try Store(path: dir + "/foreign") } throws: { error in
                if case FeedstoreError.notAStore = error { return "\(error)".contains("without Feedstore metadata") }
                return false
            }
            let again = try LMDBEnvironment(path: dir + "/foreign", flags: .readOnly, mapSize: 1 << 20, maxDatabases: 4, maxReaders: 8, mode: 0o600)
            // A transaction holds its environment unretained: `again` must outlive `read`.
            try withExtendedLifetime(again) {
                let read = try LMDBTransaction(environment: again, readOnly: true)
                #expect(try read.get(try read.openDatabase(named: "", create: false)!, key: Array("hello".utf8)) == Array("world".utf8))
            }
        }
    }

    /// An index naming a field its type lacks.
    struct MisIndexed: Entity {
        var id: Int64
        var name: String
        static let indexes = [IndexDefinition("byNmae", ["nmae"])]
    }

    /// An open that fails makes nothing: not the store's files, not the directories it made.
    @Test func aFailedOpenLeavesNothingBehind() throws {
        try withTemporaryDirectory { dir in
            let fm = FileManager.default
            // A store in directories that do not exist yet: refused at registration, after LMDB
            // made its files.
            #expect { try Store(path: dir + "/a/b/s", entities: [MisIndexed.self]) } throws: { error in
                if case FeedstoreError.unknownField(_, "nmae", _, _) = error { return true }
                return false
            }
            #expect(try fm.contentsOfDirectory(atPath: dir).isEmpty)
            // In an empty directory that exists: the directory stays, empty.
            try fm.createDirectory(atPath: dir + "/empty", withIntermediateDirectories: false)
            #expect(throws: FeedstoreError.self) { try Store(path: dir + "/empty", entities: [MisIndexed.self]) }
            #expect(try fm.contentsOfDirectory(atPath: dir + "/empty").isEmpty)
            // A store that exists keeps everything.
            try Store(path: dir + "/kept", entities: [Item.self]).close()
            let before = try fm.contentsOfDirectory(atPath: dir + "/kept").sorted()
            #expect(throws: FeedstoreError.self) { try Store(path: dir + "/kept", entities: [MisIndexed.self]) }
            #expect(try fm.contentsOfDirectory(atPath: dir + "/kept").sorted() == before)
            #expect(try Store(path: dir + "/kept", entities: [Item.self]).read { try $0.count(Item.self) } == 0)
        }
    }

    @Test func aNewerFormatVersionIsRefusedAndTheDataKept() throws {
        try withTemporaryDirectory { dir in
            let store = try seeded(dir)
            let before = try snapshot(store)
            try store.core.mapLock.withShared {
                let txn = try LMDBTransaction(environment: store.core.environment, readOnly: false)
                try txn.put(store.core.system.meta, key: MetaKey.format, value: [0, 0, 0, 99])
                try txn.commit()
            }
            store.close()
            #expect { try Store(path: dir + "/s", entities: [Item.self]) } throws: { error in
                if case let FeedstoreError.formatVersionTooNew(_, found, supported) = error { return found == 99 && supported == Catalog.currentFormatVersion }
                return false
            }
            // Put the version back: every record is still there.
            let env = try LMDBEnvironment(path: dir + "/s", flags: [], mapSize: 64 << 20, maxDatabases: 126, maxReaders: 8, mode: 0o600)
            let txn = try LMDBTransaction(environment: env, readOnly: false)
            try txn.put(try txn.openDatabase(named: SystemDatabases.metaName, create: false)!, key: MetaKey.format, value: [0, 0, 0, UInt8(Catalog.currentFormatVersion)])
            try txn.commit()
            env.close()
            let reopened = try Store(path: dir + "/s", entities: [Item.self, Note.self])
            #expect(try snapshot(reopened) == before)
        }
    }

    @Test func closedStoresAndEndedTransactionsAreMisuseErrors() throws {
        try withTemporaryDirectory { dir in
            let store = try seeded(dir)
            var leaked: ReadTransaction?
            try store.read { leaked = $0 }
            #expect { try leaked!.get(Item.self, id: 1) } throws: { ($0 as? FeedstoreError) == .transactionEnded }
            #expect { try store.write { _ in try store.write { _ in } } } throws: { ($0 as? FeedstoreError) == .nestedWrite }
            store.close()
            #expect { try store.read { try $0.count(Item.self) } } throws: { error in
                if case FeedstoreError.storeClosed = error { return true }
                return false
            }
            #expect(throws: FeedstoreError.self) { try store.write { tx in try tx.delete(Item.self, id: 1) } }
            let reopened = try Store(path: dir + "/s", entities: [Item.self, Note.self])
            #expect(try reopened.read { try $0.count(Item.self) } == 5)
        }
    }

    @Test func badQueriesAreTypedErrors() throws {
        try withTemporaryDirectory { dir in
            let store = try seeded(dir)
            try store.read { tx in
                #expect(throws: FeedstoreError.unknownIndex(entity: "Item", index: "nope", indexes: ["byGroupScore", "byName", "flagged", "byTag", "id"])) { try tx.query(Item.self, index: "nope") }
                #expect(throws: FeedstoreError.unknownEntity("Nope", entities: ["Item", "Note"])) { try tx.entries(entity: "Nope", index: nil) }
                #expect { try tx.query(Item.self, index: "byName", range: IndexRange(from: .inclusive(["z"]), to: .inclusive(["a"]))) }
                    throws: { error in if case FeedstoreError.invalidRange = error { return true }; return false }
                #expect { try tx.query(Item.self, index: "byName", range: .prefix("a", "b")) }
                    throws: { error in if case FeedstoreError.invalidRange = error { return true }; return false }
                #expect { try tx.query(Item.self, index: "byName", range: .prefix(.array([]))) }
                    throws: { error in if case FeedstoreError.invalidRange = error { return true }; return false }
                #expect { try tx.query(Item.self, index: "byName", offset: -1) }
                    throws: { error in if case FeedstoreError.invalidRange = error { return true }; return false }
                // A record read as the wrong type is a decoding error naming the record.
                struct Wrong: Entity { var id: Int64; var missing: String; static let entityName = "Item" }
                #expect { try tx.get(Wrong.self, id: 1) } throws: { error in
                    if case let FeedstoreError.decodingFailed(entity, id, _) = error { return entity == "Item" && id == .int(1) }
                    return false
                }
            }
            let readOnly = try Store(path: dir + "/s", options: StoreOptions(readOnly: true))
            #expect(throws: FeedstoreError.self) { try readOnly.write { _ in } }
        }
    }

    @Test func verifyNamesEveryKindOfIndexDamage() throws {
        try withTemporaryDirectory { dir in
            let store = try seeded(dir)
            #expect(try store.verify().isEmpty)
            // Behind the store's back: drop item 1's name entry, and add one for a record 99
            // that does not exist, whose name repeats item 3's in a unique index.
            let byName = try store.core.schema.entity("Item").index(named: "byName")
            try store.core.mapLock.withShared {
                let txn = try LMDBTransaction(environment: store.core.environment, readOnly: false)
                #expect(try txn.delete(byName.database, key: try KeyEncoding.encode([.string("n1"), .int(1)])))
                #expect(try txn.put(byName.database, key: try KeyEncoding.encode([.string("n3"), .int(99)]), value: []))
                try txn.commit()
            }
            let problems = try store.verify().filter { $0.location == "index:Item.byName" }.map(\.problem)
            #expect(problems.contains("missing entry [\"n1\",1]"), "\(problems)")
            #expect(problems.contains("entry without a matching record [\"n3\",99]"), "\(problems)")
            #expect(problems.contains("unique key [\"n3\"] held twice"), "\(problems)")
        }
    }
}
