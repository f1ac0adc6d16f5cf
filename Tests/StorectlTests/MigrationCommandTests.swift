@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import Foundation
import Testing

/// A migration of a million records (`Tools/test --long`; a hundred thousand in the quick run)
/// killed in the middle (SIGKILL, no cleanup) leaves a consistent store with its progress at the
/// last committed step, and the next run finishes it.
@Suite struct MigrationCommandTests {
    @Test func aKilledMigrationOfAMillionRecordsResumesAndFinishes() async throws {
        try await onOwnThread { try self.aKilledMigrationOfAMillionRecordsResumesAndFinishesOnItsThread() }
    }

    /// The body of ``aKilledMigrationOfAMillionRecordsResumesAndFinishes()``, on a thread of its own (``onOwnThread(_:)``).
    func aKilledMigrationOfAMillionRecordsResumesAndFinishesOnItsThread() throws {
        let messages = TestSize.choose(quick: 40_000, long: 1_000_000)
        // A hundred steps, so that the kill after 25 of them lands a quarter of the way.
        let step = messages / 100
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            do {
                let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
                var feed = DemoFeed(seed: 31)
                try feed.populate(store, messages: messages, contacts: 100, batch: 20_000)
                try store.sync()
                store.close()
            }
            let migration = try RunningTool(storectlURL, ["demo", "migrate", path, "--records-per-transaction", "\(step)"])
            // The first line comes once the new index is built; kill it some steps later.
            #expect(migration.waitForLines(25, timeout: 600))
            migration.kill()
            let killed = migration.finish(timeout: 60)
            #expect(killed.status != 0, "the migration ended before it was killed")

            let store = try Store(path: path, entities: [Contact.self, MessageV2.self])
            let stopped = try #require(try store.migrationProgress(of: MessageV2.self, name: "title-to-subject"))
            print("migration killed after \(stopped.processed) of \(stopped.total) records")
            #expect(!stopped.finished && stopped.processed >= messages / 4 && stopped.processed < messages)
            #expect(stopped.processed % step == 0)
            // Records up to the last committed step are migrated; the ones after are untouched.
            let last = UInt64(stopped.processed)
            try store.read { (tx) throws in
                #expect(try tx.record(entity: "Message", id: .uint(last))?["subject"] != nil)
                #expect(try tx.record(entity: "Message", id: .uint(last + 1))?["subject"] == nil)
                #expect(try tx.count(entity: "Message") == messages)
            }
            // Indexes and counts agree with the records. (A full `verify` of a million records
            // takes minutes in a debug build; MigrationTests verifies stopped and finished
            // migrations in full.)
            try expectIndexesAgree(store, records: messages)
            store.close()

            let resumed = try runTool(storectlURL, ["demo", "migrate", path, "--records-per-transaction", "\(step)"])
            #expect(resumed.status == 0)
            let lines = resumed.stdout.split(separator: "\n")
            #expect(lines.first == "migrated \(stopped.processed + step) of \(messages)")
            #expect(lines.last?.hasPrefix("finished: \(messages) rewritten, 0 deleted") == true)
            #expect(try runTool(storectlURL, ["demo", "migrate", path]).stdout == "already finished\n")

            let reopened = try Store(path: path, entities: [Contact.self, MessageV2.self])
            defer { reopened.close() }
            var feed = DemoFeed(seed: 31)
            for _ in 1...100 { _ = feed.contact(id: 0) }
            try reopened.read { (tx) throws in
                // Every 37th record, from both sides of the kill, is its original under new names.
                var mismatches = 0
                for id in 1...UInt64(messages) {
                    let m = feed.message(id: id, contacts: 100)
                    guard id % 37 == 0 else { continue }
                    let want = MessageV2(id: m.id, folder: m.folder, date: m.date, subject: m.title, isRead: m.isRead, contactId: m.contactId)
                    if try tx.get(MessageV2.self, id: id) != want { mismatches += 1 }
                }
                #expect(mismatches == 0)
                #expect(try tx.count(MessageV2.self, index: "bySubject") == messages)
            }
            try expectIndexesAgree(reopened, records: messages)
        }
    }

    /// Every index of Message counts what a walk of its entries finds, and the unconditional ones
    /// hold every record.
    func expectIndexesAgree(_ store: Store, records: Int) throws {
        try store.read { (tx) throws in
            for index in try tx.entity("Message").indexes {
                let counted = try tx.resolve(entity: "Message", index: index.definition.name, range: .all).count
                var walked = 0
                try tx.scan(entity: "Message", index: index.definition.name, range: .all, reverse: false, offset: 0, limit: nil) { _, _ in walked += 1 }
                #expect(counted == walked, "index \(index.definition.name)")
                if index.definition.condition == nil { #expect(counted == records, "index \(index.definition.name)") }
            }
            let problems = try tx.entity("Message").indexes.flatMap { index in
                try tx.access { try index.counted.check(in: $0, checkEveryPosition: false) }
            }
            #expect(problems.isEmpty)
        }
    }
}
