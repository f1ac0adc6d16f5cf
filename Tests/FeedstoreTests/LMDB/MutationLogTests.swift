@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// What a store's write transactions record (``LMDBMutationLog``), replayed in order on a copy
/// of the store as it was before them, makes every tree of the copy hold what the store holds:
/// records, index entries, counted trees changed in place, the journal, trimmed keys, the
/// catalog, and indexes made and dropped.
@Suite(.blocking) struct MutationLogTests {
    /// Every named database and its entries, read with raw LMDB.
    static func contents(of path: String) throws -> [String: [[UInt8]: [UInt8]]] {
        let env = try LMDBEnvironment(path: path, flags: .readOnly, mapSize: 1 << 30, maxDatabases: 256, maxReaders: 8, mode: 0o600)
        defer { env.close() }
        let txn = try LMDBTransaction(environment: env, readOnly: true)
        let main = try txn.openDatabase(named: "", create: false)!
        var all: [String: [[UInt8]: [UInt8]]] = [:]
        for name in try entries(main, in: txn).keys.map({ String(decoding: $0, as: UTF8.self) }) {
            all[name] = try entries(txn.openDatabase(named: name, create: false)!, in: txn)
        }
        txn.abort()
        return all
    }

    static func entries(_ db: LMDBDatabase, in txn: borrowing LMDBTransaction) throws -> [[UInt8]: [UInt8]] {
        try txn.withCursor(db) { cursor in
            var found: [[UInt8]: [UInt8]] = [:]
            var more = try cursor.first()
            while more {
                found[Array(cursor.key)] = Array(cursor.value)
                more = try cursor.next()
            }
            return found
        }
    }

    @Test(arguments: testSeeds(3)) func replayingTheRecordsOnTheStoreBeforeThemGivesTheSameStore(seed: UInt64) async throws {
        try await withTemporaryDirectory { dir in
            var options = StoreOptions(durability: .none, initialMapSize: 512 << 10)
            // Retention short enough that commits trim the journal as they go.
            options.journalRetention = JournalRetention(minimumCommits: 30)
            var random = RandomValues(seed: seed)
            func item(_ id: Int64, _ prefix: String, _ random: inout RandomValues) -> Item {
                Item(id: id, group: id % 5, score: random.double(), name: "\(prefix)\(id)", flag: Bool.random(using: &random.rng),
                     tag: Bool.random(using: &random.rng) ? UUID(uuid: (UInt8(id % 4), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) : nil)
            }
            let first = (0..<200).map { item(Int64($0), "n", &random) }
            var store = try Store(path: dir + "/s", entities: [Item.self], options: options)
            try await store.write { tx in for value in first { try tx.put(value) } }
            store.close()
            try FileManager.default.createDirectory(atPath: dir + "/copy", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: dir + "/s/data.mdb", toPath: dir + "/copy/data.mdb")

            store = try Store(path: dir + "/s", entities: [Item.self], options: options)
            let records = Protected<[[UInt8]]>([])
            store.core.mutationLogger.withLock { $0 = { record in records.withLock { $0.append(record) } } }
            for round in 0..<40 {
                switch Int.random(in: 0..<4, using: &random.rng) {
                case 0:
                    // Group commits of one-row writes, some of them deletes.
                    let writes = (0..<Int.random(in: 1...20, using: &random.rng)).map { _ in
                        (Bool.random(using: &random.rng), item(Int64.random(in: 0..<400, using: &random.rng), "w", &random))
                    }
                    _ = try store.writeEach(writes.map { deletes, value in
                        { tx in if deletes { _ = try tx.delete(Item.self, id: value.id) } else { try tx.put(value) } }
                    })
                case 1:
                    // Many rows in one transaction: counted trees split and merge.
                    let values = (0..<Int.random(in: 50...300, using: &random.rng)).map { _ in item(Int64.random(in: 0..<2_000, using: &random.rng), "b", &random) }
                    _ = try store.writeEach([{ tx in for value in values { try tx.put(value) } }])
                case 2:
                    let group = Int64.random(in: 0..<5, using: &random.rng)
                    _ = try store.writeEach([{ tx in _ = try tx.deleteRange(Item.self, index: "byGroupScore", range: .prefix(.int(group))) }])
                default:
                    // Concurrent async writers share commits.
                    let writing = store
                    try await withThrowingTaskGroup(of: Void.self) { tasks in
                        for w in 0..<8 {
                            let id = Int64(round * 100 + w) + 5_000
                            tasks.addTask { try await writing.write { tx in try tx.put(Item(id: id, group: id % 5, score: 1, name: "a\(id)", flag: true, tag: nil)) } }
                        }
                        try await tasks.waitForAll()
                    }
                }
            }
            store.close()
            #expect(!records.current.isEmpty)

            let env = try LMDBEnvironment(path: dir + "/copy", flags: .noSync, mapSize: 1 << 30, maxDatabases: 256, maxReaders: 8, mode: 0o600)
            for record in records.current {
                let txn = try LMDBTransaction(environment: env, readOnly: false)
                try LMDBMutationLog.replay(record, in: txn)
                try txn.commit()
            }
            try env.sync(force: true)
            env.close()
            let (original, replayed) = (try Self.contents(of: dir + "/s"), try Self.contents(of: dir + "/copy"))
            #expect(Set(replayed.keys) == Set(original.keys))
            for (name, entries) in original {
                let copy = replayed[name] ?? [:]
                let differing = Set(entries.keys).union(copy.keys).filter { entries[$0] != copy[$0] }.count
                #expect(differing == 0, "tree \(name): \(differing) of \(entries.count) keys differ, seed \(seed)")
            }
            let copy = try Store(path: dir + "/copy", entities: [Item.self], options: options)
            #expect(try copy.verify().isEmpty, "seed \(seed)")
            copy.close()
        }
    }

    /// A database deleted and another made in the same transaction may share a handle: the
    /// record names each by its own name.
    @Test func aDeletedDatabasesHandleMayNameTheNextOne() throws {
        try withTemporaryDirectory { dir in
            for path in [dir + "/a", dir + "/b"] {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            }
            func open(_ path: String) throws -> LMDBEnvironment {
                try LMDBEnvironment(path: path, flags: [], mapSize: 1 << 24, maxDatabases: 8, maxReaders: 8, mode: 0o600)
            }
            let (original, copy) = (try open(dir + "/a"), try open(dir + "/b"))
            let log = LMDBMutationLog(environment: original)
            let txn = try LMDBTransaction(environment: original, readOnly: false, log: log)
            let first = try txn.openDatabase(named: "first", create: true)!
            try txn.put(first, key: [1], value: [1])
            try txn.drop(first, delete: true)
            let second = try txn.openDatabase(named: "second", create: true)!
            try txn.put(second, key: [2], value: [2])
            try txn.commit()
            let replaying = try LMDBTransaction(environment: copy, readOnly: false)
            try LMDBMutationLog.replay(log.encoded, in: replaying)
            try replaying.commit()
            original.close()
            copy.close()
            let (a, b) = (try Self.contents(of: dir + "/a"), try Self.contents(of: dir + "/b"))
            #expect(a == b && a["second"] == [[2]: [2]] && a["first"] == nil)
        }
    }

    /// Leaving out one record makes the copy differ: the comparison above can fail.
    @Test func aMissingRecordLeavesTheCopyDifferent() throws {
        try withTemporaryDirectory { dir in
            let options = StoreOptions(durability: .none)
            var store = try Store(path: dir + "/s", entities: [Item.self], options: options)
            store.close()
            try FileManager.default.createDirectory(atPath: dir + "/copy", withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: dir + "/s/data.mdb", toPath: dir + "/copy/data.mdb")
            store = try Store(path: dir + "/s", entities: [Item.self], options: options)
            defer { store.close() }
            let records = Protected<[[UInt8]]>([])
            store.core.mutationLogger.withLock { $0 = { record in records.withLock { $0.append(record) } } }
            for id in 0..<3 { try store.write { tx in try tx.put(Item(id: Int64(id), group: 1, score: 1, name: "n\(id)", flag: true, tag: nil)) } }
            store.close()
            #expect(records.current.count == 3)
            let env = try LMDBEnvironment(path: dir + "/copy", flags: .noSync, mapSize: 1 << 30, maxDatabases: 256, maxReaders: 8, mode: 0o600)
            for record in records.current.dropLast() {
                let txn = try LMDBTransaction(environment: env, readOnly: false)
                try LMDBMutationLog.replay(record, in: txn)
                try txn.commit()
            }
            env.close()
            let differs = try Self.contents(of: dir + "/s") != Self.contents(of: dir + "/copy")
            #expect(differs)
        }
    }
}
