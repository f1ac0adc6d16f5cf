@_spi(Benchmarking) @testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

@Suite(.blocking) struct JournalTests {
    static func item(_ id: Int64, name: String? = nil) -> Item {
        Item(id: id, group: 1, score: Double(id), name: name ?? "i\(id)", flag: false, tag: nil)
    }

    func commit(_ store: Store, _ count: Int, from start: Int64 = 1) throws {
        for i in 0..<Int64(count) { try store.write { tx in try tx.put(Self.item(start + i)) } }
    }

    @Test func journalReadsCommitsWholeAndInOrder() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            try store.write { tx in
                try tx.put(Self.item(1))
                try tx.put(Self.item(2))
            }
            try store.write { tx in
                try tx.put(Self.item(1, name: "renamed"))
                try tx.delete(Item.self, id: 2)
                try tx.put(Self.item(1, name: "renamed"))  // identical: no entry
            }
            try store.write { tx in try tx.put(Self.item(1, name: "renamed")) }  // no change: no commit
            let commits = try store.read { try $0.journal(after: 0) }
            #expect(commits.map(\.sequence) == [1, 2])
            #expect(commits[0].entries.map(\.kind) == [.insert, .insert])
            #expect(commits[1].entries.map(\.kind) == [.update, .delete])
            #expect(commits[1].entries[0].changedFields == ["name"])
            let byName = commits[1].entries[0].indexChanges.first { $0.index == "byName" }
            #expect(try byName?.before?.components() == ["i1", 1] && byName?.after?.components() == ["renamed", 1])
            let unchanged = commits[1].entries[0].indexChanges.first { $0.index == "byGroupScore" }
            #expect(unchanged?.before == unchanged?.after && unchanged?.before != nil)
            #expect(try store.read { try $0.journal(after: 0, limit: 1) }.count == 1)
            #expect(try store.read { try $0.journal(after: 2) }.isEmpty)
        }
    }

    @Test func entriesWalkedOneByOneAreTheCommitsEntriesWithTheirTimes() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            var next: Int64 = 1
            for size in [1, 5, 1, 40, 2] {
                try store.write { tx in
                    for _ in 0..<size {
                        try tx.put(Self.item(next))
                        next += 1
                    }
                }
            }
            let commits = try store.read { try $0.journal(after: 1) }
            let want = commits.flatMap { commit in commit.entries.map { ($0, commit.timestamp) } }
            var walked: [(JournalEntry, Date)] = []
            let finished = try store.read { tx in try tx.forEachJournalEntry(after: 1) { walked.append(($0, $1)); return true } }
            #expect(finished == 5)
            #expect(walked.map(\.0) == want.map(\.0) && walked.map(\.1) == want.map(\.1))
            // Stopped inside the fourth commit: the last one walked to its end is the third.
            var seen = 0
            let stopped = try store.read { tx in try tx.forEachJournalEntry(after: 1) { _, _ in seen += 1; return seen < 10 } }
            #expect(stopped == 3 && seen == 10)
            #expect(try store.read { tx in try tx.forEachJournalEntry(after: 5) { _, _ in Issue.record("no entry after the last"); return true } } == 5)
            #expect(try store.read { try $0.journal(newest: 2) }.map(\.sequence) == [5, 4])
            #expect(try store.read { try $0.journal(newest: 9) }.map(\.sequence) == [5, 4, 3, 2, 1])
        }
    }

    @Test func durableCursorsPersistTheirPositionAcrossReopen() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            var store = try Store(path: path, entities: [Item.self])
            try commit(store, 3)
            let cursor = try store.journalCursor(named: "indexer", start: .oldest)
            #expect(try cursor.position() == 0)
            let batch = try cursor.next(limit: 2)
            #expect(batch.map(\.sequence) == [1, 2])
            try cursor.acknowledge(through: 2)
            store.close()
            store = try Store(path: path, entities: [Item.self])
            let again = try store.journalCursor(named: "indexer")
            #expect(try again.position() == 2)
            #expect(try again.next().map(\.sequence) == [3])
            let late = try store.journalCursor(named: "late")  // starts at the head
            #expect(try late.next().isEmpty)
            #expect(try store.read { try $0.journalCursors() }.map(\.name) == ["indexer", "late"])
        }
    }

    /// A move acknowledged with the next commit waits for one: a write records it, it never moves
    /// a cursor back or brings back a removed one, and closing the store records what is left.
    @Test func acknowledgingWithTheNextCommitRidesOnIt() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            var store = try Store(path: path, entities: [Item.self])
            try commit(store, 4)
            let cursor = try store.journalCursor(named: "shipper", start: .oldest)
            let gone = try store.journalCursor(named: "gone", start: .oldest)
            gone.acknowledgeWithNextCommit(through: 3)
            try gone.remove()
            cursor.acknowledgeWithNextCommit(through: 2)
            #expect(try cursor.position() == 0, "no commit yet")
            try commit(store, 1, from: 10)
            #expect(try cursor.position() == 2, "the next commit carried it")
            #expect(try store.read { try $0.journalCursors() }.map(\.name) == ["shipper"], "a removed cursor stays removed")

            try cursor.acknowledge(through: 4)
            cursor.acknowledgeWithNextCommit(through: 3)
            try commit(store, 1, from: 11)
            #expect(try cursor.position() == 4, "never moved back")

            cursor.acknowledgeWithNextCommit(through: 5)
            store.close()
            store = try Store(path: path, entities: [Item.self])
            defer { store.close() }
            #expect(try store.journalCursor(named: "shipper").position() == 5, "recorded when the store closed")
        }
    }

    @Test func retentionTrimsPassedCommitsAndReportsReadersBehindIt() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self],
                                  options: StoreOptions(durability: .none, journalRetention: JournalRetention(minimumCommits: 10)))
            let slow = try store.journalCursor(named: "slow", start: .oldest)
            try commit(store, 50)
            try slow.acknowledge(through: 20)
            try store.trimJournal()
            // Soft rule: the cursor at 20 holds commits 21 onwards.
            #expect(try store.read { try $0.journalBounds() } == JournalBounds(first: 21, last: 50))
            #expect(try slow.next(limit: 1).first?.sequence == 21)
            try slow.remove()
            try store.trimJournal()
            #expect(try store.read { try $0.journalBounds() } == JournalBounds(first: 41, last: 50))
            #expect {
                try store.read { try $0.journal(after: 5) }
            } throws: { ($0 as? FeedstoreError) == .journalBehindRetention(requested: 5, firstRetained: 41) }
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func anAgeBoundTrimsOldCommits() throws {
        try withTemporaryDirectory { dir in
            let retention = JournalRetention(minimumCommits: 1, maximumAge: 0.2)
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none, journalRetention: retention))
            _ = try store.journalCursor(named: "stalled", start: .oldest)
            try commit(store, 10)
            #expect(try store.read { try $0.journalBounds() }.first == 1)
            usleep(300_000)
            try commit(store, 1, from: 100)
            try store.trimJournal()
            #expect(try store.read { try $0.journalBounds() } == JournalBounds(first: 11, last: 11))
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func aSizeBoundKeepsTheJournalSmall() throws {
        try withTemporaryDirectory { dir in
            let retention = JournalRetention(minimumCommits: 1, maximumBytes: 64 << 10)
            let store = try Store(path: dir + "/s", entities: [Note.self], options: StoreOptions(durability: .none, journalRetention: retention))
            _ = try store.journalCursor(named: "stalled", start: .oldest)
            for i in 0..<400 {
                try store.write { tx in
                    try tx.put(Note(id: "n\(i % 50)", body: "body \(i) " + String(repeating: "x", count: 200), priority: 0,
                                    when: Date(timeIntervalSinceReferenceDate: Double(i)), labels: []))
                }
            }
            let bounds = try store.read { try $0.journalBounds() }
            let bytes = try store.core.withReadTransaction { txn in
                let stats = try txn.statistics(store.core.system.journal)
                return stats.pages * stats.pageSize
            }
            #expect(bounds.last == 400 && bounds.first > 100, "\(bounds)")
            #expect(bytes <= 96 << 10, "journal takes \(bytes) bytes")
            #expect(try store.verify().isEmpty)
        }
    }

    /// A bulk load's large commits, once trimmed, are gone for readers at once and their keys
    /// are removed by the following small commits, each its share: trimming never makes one
    /// small commit pay for a large one.
    @Test func trimmedBulkCommitsAreRemovedABoundedNumberOfKeysPerCommit() throws {
        try withTemporaryDirectory { dir in
            var options = StoreOptions(durability: .none, journalRetention: JournalRetention(minimumCommits: 5))
            // Counted per commit: the idle writer's passes would remove keys between them.
            options.removesTrimmedKeysWhenIdle = false
            let store = try Store(path: dir + "/s", entities: [Item.self], options: options)
            for batch in 0..<5 {
                try store.write { tx in for i in 0..<5_000 { try tx.put(Self.item(Int64(batch * 5_000 + i))) } }
            }
            func keys() throws -> Int { try store.core.withReadTransaction { try $0.statistics(store.core.system.journal).entries } }
            var before = try keys()
            #expect(before == 5 * 5_001)
            for i in 0..<60 {
                try commit(store, 1, from: 100_000 + Int64(i))
                let after = try keys()
                // Each small commit adds an entry and a header, and removes at most its share of keys.
                let share = JournalTrimmer.removalsPerRun / Int(JournalTrimmer.softTrimRun)
                #expect(before + 2 - after <= share, "commit \(i) removed \(before + 2 - after) keys")
                if i >= 16 { #expect(before + 2 - after == share, "commit \(i) removed \(before + 2 - after) keys: every commit pays its share of the backlog") }
                before = after
            }
            let bounds = try store.read { try $0.journalBounds() }
            #expect(bounds.last == 65 && bounds.first > 5, "\(bounds): the bulk commits are trimmed")
            let commits = try store.read { try $0.journal(after: bounds.first - 1, limit: 1_000) }
            #expect(commits.map(\.sequence) == Array(bounds.first...bounds.last))
            #expect(try store.verify().isEmpty)
            // 60 small commits removed at most 60 × 128 keys: the bulk load's 25,005 are not all gone yet.
            #expect(try keys() > 2 * Int(bounds.last - bounds.first + 1))
            try store.trimJournal()
            let trimmed = try store.read { try $0.journalBounds() }
            #expect(trimmed.last == bounds.last && trimmed.first >= bounds.first)
            #expect(try keys() == 2 * Int(trimmed.last - trimmed.first + 1), "trimJournal removes every trimmed key")
            try commit(store, 1, from: 200_000)
            #expect(try store.read { try $0.journalBounds() }.last == 66)
            #expect(try store.verify().isEmpty)
        }
    }

    /// While no write comes, the writer removes the keys of trimmed commits itself, a bounded
    /// pass at a time, making no journal commit; readers and `verify` see the same journal.
    @Test(arguments: [Durability.none, .full])
    func theIdleWriterRemovesTrimmedKeys(durability: Durability) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self],
                                  options: StoreOptions(durability: durability, journalRetention: JournalRetention(minimumCommits: 5)))
            for batch in 0..<5 {
                try store.write { tx in for i in 0..<5_000 { try tx.put(Self.item(Int64(batch * 5_000 + i))) } }
            }
            func keys() throws -> Int { try store.core.withReadTransaction { try $0.statistics(store.core.system.journal).entries } }
            // Enough small commits to trim the bulk ones; each removes only its share of their keys.
            for i in 0..<20 { try commit(store, 1, from: 100_000 + Int64(i)) }
            let bounds = try store.read { try $0.journalBounds() }
            #expect(bounds.last == 25 && bounds.first > 5, "\(bounds): the bulk commits are trimmed")
            let retainedKeys = 2 * Int(bounds.last - bounds.first + 1)
            // The 20 commits remove at most their shares of the trimmed keys, far fewer than there
            // are: the rest can only go by the idle writer's passes. (How many of those ran between
            // the commits depends on the machine's load, so the keys left now are not counted.)
            let share = JournalTrimmer.removalsPerRun / Int(JournalTrimmer.softTrimRun)
            #expect(20 * share + WriteQueue.keysPerMaintenancePass < 25_005 - retainedKeys)
            let deadline = ContinuousClock.now + .seconds(20)
            while try keys() > retainedKeys, ContinuousClock.now < deadline { usleep(5_000) }
            #expect(try keys() == retainedKeys, "the idle writer removed every trimmed key")
            #expect(try store.read { try $0.journalBounds() } == bounds, "and made no journal commit")
            let commits = try store.read { try $0.journal(after: bounds.first - 1, limit: 1_000) }
            #expect(commits.map(\.sequence) == Array(bounds.first...bounds.last))
            #expect(try store.verify().isEmpty)
            try commit(store, 1, from: 200_000)
            #expect(try store.read { try $0.journalBounds() }.last == 26)
        }
    }

    @Test func hardBoundsTrimPastAStalledCursor() throws {
        try withTemporaryDirectory { dir in
            let retention = JournalRetention(minimumCommits: 5, maximumCommits: 15)
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none, journalRetention: retention))
            let stalled = try store.journalCursor(named: "stalled", start: .oldest)
            try commit(store, 40)
            #expect(try store.read { try $0.journalBounds() }.first == 26)  // trimmed while writing
            #expect { try stalled.next() } throws: { error in
                if case FeedstoreError.journalBehindRetention(requested: 0, firstRetained: 26) = error { return true }
                return false
            }
            try stalled.skipToLatest()
            #expect(try stalled.next().isEmpty)
            #expect(try store.verify().isEmpty)
        }
    }

    /// Each commit's header follows its entries in the journal; `verify` and readers report a
    /// header that is missing or miscounts its commit instead of returning a wrong commit.
    @Test func aMissingOrMiscountingCommitHeaderIsReported() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            try commit(store, 3)
            try store.write { tx in try tx.put(Self.item(10)); try tx.put(Self.item(11)) }
            #expect(try store.verify().isEmpty)
            func tamper(_ change: (borrowing LMDBTransaction) throws -> Void) throws {
                try store.core.mapLock.withShared {
                    let txn = try LMDBTransaction(environment: store.core.environment, readOnly: false)
                    try change(txn)
                    try txn.commit()
                }
            }
            try tamper { txn in
                try txn.put(store.core.system.journal, key: JournalKeys.headerKey(4),
                            value: JournalKeys.commitHeader(timestamp: Date(), entries: 3))
            }
            #expect(try store.verify().map(\.problem) == ["commit 4 has 2 entries; its header says 3"])
            for read in [{ try store.read { try $0.journal(after: 3) } }, { try store.read { tx in try tx.forEachJournalEntry(after: 3) { _, _ in true } } }] as [() throws -> Any] {
                #expect { try read() } throws: { error in
                    if case let FeedstoreError.corruptData(what, reason) = error { return what == "journal" && reason.contains("commit 4") }
                    return false
                }
            }
            try tamper { txn in _ = try txn.delete(store.core.system.journal, key: JournalKeys.headerKey(2)) }
            #expect(try store.verify().map(\.problem).contains("commit 2 has 1 entries but no header"))
            for read in [{ try store.read { try $0.journal(after: 1, limit: 1) } }, { try store.read { tx in try tx.forEachJournalEntry(after: 1) { _, _ in true } } }] as [() throws -> Any] {
                #expect { try read() } throws: { error in
                    if case let FeedstoreError.corruptData(_, reason) = error { return reason.contains("commit 2") }
                    return false
                }
            }
        }
    }
}
