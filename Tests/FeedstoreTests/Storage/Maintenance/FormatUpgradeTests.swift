@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Format 2 keeps commit headers in the journal and no per-commit "last sequence" key. A format 1
/// store (headers in `feedstore.commits`, `journal.last` in the meta database) is upgraded by the
/// first opening for writing, and refused, untouched, by a read-only one.
@Suite(.blocking) struct FormatUpgradeTests {
    static func item(_ id: Int64, name: String? = nil) -> Item {
        Item(id: id, group: id % 3, score: Double(id), name: name ?? "i\(id)", flag: id % 2 == 0, tag: nil)
    }

    /// Everything a reader of the journal and records sees.
    func snapshot(_ store: Store) throws -> String {
        try store.read { tx in
            let bounds = try tx.journalBounds()
            let commits = try tx.journal(after: bounds.first - 1, limit: 1_000)
            let items = try tx.entries(entity: "Item", index: "byName").map { "\($0.key)=\(FieldValue.object($0.record))" }
            return "\(bounds)|\(commits.map { "\($0.sequence)@\($0.timestamp.timeIntervalSinceReferenceDate):\($0.entries)" })|\(items)"
        }
    }

    /// Rewrites a closed format 2 store in format 1's layout, as an older Feedstore wrote it.
    func rewriteAsFormatOne(_ path: String) throws {
        let env = try LMDBEnvironment(path: path, flags: [], mapSize: 64 << 20, maxDatabases: 126, maxReaders: 8, mode: 0o600)
        defer { env.close() }
        let txn = try LMDBTransaction(environment: env, readOnly: false)
        let meta = try txn.openDatabase(named: SystemDatabases.metaName, create: false)!
        let journal = try txn.openDatabase(named: SystemDatabases.journalName, create: false)!
        let commits = try txn.openDatabase(named: SystemDatabases.formatOneCommitsName, create: true)!
        var headers: [(key: [UInt8], sequence: UInt64, value: [UInt8])] = []
        try txn.withCursor(journal) { cursor in
            var found = try cursor.first()
            while found {
                if try JournalKeys.isHeader(cursor.key) {
                    headers.append((Array(cursor.key), try JournalKeys.sequence(from: cursor.key), Array(cursor.value)))
                }
                found = try cursor.next()
            }
        }
        for header in headers {
            #expect(try txn.delete(journal, key: header.key))
            try txn.put(commits, key: JournalKeys.sequenceKey(header.sequence), value: header.value)
        }
        let first = try MetaKey.decodeUInt64(try txn.get(meta, key: MetaKey.firstRetained), what: "first") ?? 1
        try txn.put(meta, key: MetaKey.formatOneLastSequence, value: MetaKey.encode(headers.last?.sequence ?? first - 1))
        try txn.put(meta, key: MetaKey.format, value: [0, 0, 0, 1])
        var catalog = try Catalog.decode(try txn.get(meta, key: MetaKey.catalog)!)
        catalog.formatVersion = 1
        try txn.put(meta, key: MetaKey.catalog, value: catalog.encoded())
        try txn.commit()
    }

    func layout(_ path: String) throws -> (format: [UInt8]?, commitsDatabase: Bool, lastSequenceKey: Bool) {
        let env = try LMDBEnvironment(path: path, flags: .readOnly, mapSize: 64 << 20, maxDatabases: 126, maxReaders: 8, mode: 0o600)
        defer { env.close() }
        let txn = try LMDBTransaction(environment: env, readOnly: true)
        let meta = try txn.openDatabase(named: SystemDatabases.metaName, create: false)!
        return (try txn.get(meta, key: MetaKey.format), try txn.openDatabase(named: SystemDatabases.formatOneCommitsName, create: false) != nil,
                try txn.get(meta, key: MetaKey.formatOneLastSequence) != nil)
    }

    @Test func aFormatOneStoreIsUpgradedOnceOpenedForWritingAndKeepsItsJournal() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let options = StoreOptions(durability: .none, journalRetention: JournalRetention(minimumCommits: 20))
            var store = try Store(path: path, entities: [Item.self], options: options)
            for i in Int64(1)...60 {
                try store.write { tx in
                    try tx.put(Self.item(i))
                    if i > 5 { try tx.put(Self.item(i - 5, name: "renamed \(i)")) }
                }
            }
            try store.write { tx in try tx.delete(Item.self, id: 3) }
            let before = try snapshot(store)
            let bounds = try store.read { try $0.journalBounds() }
            #expect(bounds.first > 1 && bounds.last == 61)  // trimmed, so the upgrade moves a partial range
            store.close()
            try rewriteAsFormatOne(path)
            #expect(try layout(path).format == [0, 0, 0, 1])

            // Read-only: refused with the way out, and nothing changes.
            #expect { try Store(path: path, options: StoreOptions(readOnly: true)) } throws: { error in
                guard case let FeedstoreError.formatUpgradeNeeded(_, found, current) = error else { return false }
                return found == 1 && current == Catalog.currentFormatVersion && "\(error)".contains("storectl upgrade")
            }
            #expect(try layout(path) == ([0, 0, 0, 1], true, true))

            store = try Store(path: path, entities: [Item.self], options: options)
            #expect(try layout(path) == ([0, 0, 0, UInt8(Catalog.currentFormatVersion)], false, false))
            #expect(try snapshot(store) == before)
            #expect(try store.inspect().formatVersion == Catalog.currentFormatVersion)
            #expect(try store.verify().isEmpty)
            // Sequences go on from the last one, and a read-only handle now opens.
            try store.write { tx in try tx.put(Self.item(100)) }
            #expect(try store.read { try $0.journal(after: 61) }.map(\.sequence) == [62])
            store.close()
            let reader = try Store(path: path, options: StoreOptions(readOnly: true))
            #expect(try reader.read { try $0.journalBounds().last } == 62)
            reader.close()
        }
    }

    @Test func sequencesGoOnWhenRetentionKeepsNoCommitAtAll() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            // Retention keeps no commit, and trims once a run of 16 may go: the 16th commit trims all.
            let options = StoreOptions(durability: .none, journalRetention: JournalRetention(minimumCommits: 0))
            var store = try Store(path: path, entities: [Item.self], options: options)
            for i in Int64(1)...16 { try store.write { tx in try tx.put(Self.item(i)) } }
            #expect(try store.read { try $0.journalBounds() } == JournalBounds(first: 17, last: 16))
            store.close()
            // Format 1 kept the newest sequence in the meta database; with nothing retained,
            // format 2 derives it from the first retained one.
            try rewriteAsFormatOne(path)
            store = try Store(path: path, entities: [Item.self], options: options)
            #expect(try store.read { try $0.journalBounds() } == JournalBounds(first: 17, last: 16))
            let watcher = store.watch(Query(Item.self, index: "byName"))
            _ = try watcher.poll()
            try store.write { tx in try tx.put(Self.item(17)) }
            #expect(try store.read { try $0.journalBounds() } == JournalBounds(first: 17, last: 17))
            #expect(try watcher.poll()?.inserts.count == 1)
            #expect(try store.verify().isEmpty)
            store.close()
        }
    }
}
