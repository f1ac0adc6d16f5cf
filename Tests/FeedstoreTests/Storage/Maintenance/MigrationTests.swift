@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Record migrations rewrite every record through a closure, in bounded transactions that carry
/// their own progress: indexes, counts and the journal stay right, a failed step rolls back alone,
/// and a migration resumes where it stopped.
@Suite(.blocking) struct MigrationTests {
    /// A store of the demo feed written with ``Message``, reopened with ``MessageV2``.
    func withMigratableStore(messages: Int, _ body: (Store, [UInt64: Message]) throws -> Void) throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            var originals: [UInt64: Message] = [:]
            do {
                let store = try Store(path: path, entities: DemoFeed.entities)
                defer { store.close() }
                var feed = DemoFeed(seed: 21)
                try feed.populate(store, messages: messages, contacts: 20)
                for m in try store.read({ try $0.query(Message.self, index: "byFolderDate") }) { originals[m.id] = m }
            }
            let store = try Store(path: path, entities: [Contact.self, MessageV2.self])
            defer { store.close() }
            try body(store, originals)
        }
    }

    func expected(_ m: Message) -> MessageV2 {
        MessageV2(id: m.id, folder: m.folder, date: m.date, subject: m.title, isRead: m.isRead, contactId: m.contactId)
    }

    @Test func aMigrationRewritesEveryRecordAndKeepsIndexesCountsAndJournal() throws {
        try withMigratableStore(messages: 2_000) { store, originals in
            // A dynamic watcher on the new index follows the migration like any other writes.
            let watcher = store.watch(entity: "Message", index: "bySubject", options: WatchOptions(sectionBy: 1))
            var mirror = SectionedMirror<[String: FieldValue]>()
            try mirror.apply(try #require(try watcher.poll()))
            let headBefore = try store.read { try $0.journalBounds().last }

            var steps: [MigrationProgress] = []
            let done = try store.migrate(MessageV2.self, name: "v2", recordsPerTransaction: 300,
                                         progress: { steps.append($0) }, MessageV2.migrated)
            #expect(done.finished && done.rewritten == 2_000 && done.deleted == 0 && done.total == 2_000)
            #expect(steps.count == 7 && steps.map(\.processed) == [300, 600, 900, 1_200, 1_500, 1_800, 2_000])
            #expect(try store.migrationProgress(of: MessageV2.self, name: "v2") == done)

            let migrated = try store.read { try $0.query(MessageV2.self, index: "byFolderDate") }
            #expect(migrated.count == 2_000)
            for m in migrated { #expect(m == expected(try #require(originals[m.id]))) }
            #expect(try store.read { tx in try tx.count(MessageV2.self, index: "bySubject", range: .prefix(.string("trip invoice"))) }
                == originals.values.filter { $0.title == "trip invoice" }.count)
            #expect(try store.verify().isEmpty)
            // One commit per step, each entry an update.
            let commits = try store.read { try $0.journal(after: headBefore, limit: 100) }
            #expect(commits.count == 7 && commits.flatMap(\.entries).count == 2_000)
            #expect(commits.flatMap(\.entries).allSatisfy { $0.kind == .update })

            while let batch = try watcher.poll() { try mirror.apply(batch) }
            let fresh = try store.read { try $0.entries(entity: "Message", index: "bySubject").map(\.record) }
            #expect(mirror.rows == fresh)

            // A finished migration returns at once, without calling the closure.
            let again = try store.migrate(MessageV2.self, name: "v2") { _ in
                Issue.record("a finished migration ran again")
                return nil
            }
            #expect(again == done)
        }
    }

    struct StepFailed: Error {}

    @Test func aFailingStepRollsBackAloneAndTheMigrationResumesAfterTheLastCommittedStep() throws {
        try withMigratableStore(messages: 1_000) { store, originals in
            #expect(throws: StepFailed.self) {
                try store.migrate(MessageV2.self, name: "v2", recordsPerTransaction: 100) { old in
                    guard case let .uint(id) = old.id else { throw StepFailed() }
                    if id == 450 { throw StepFailed() }
                    // Every tenth message is dropped.
                    return id % 10 == 0 ? nil : try MessageV2.migrated(old)
                }
            }
            let stopped = try #require(try store.migrationProgress(of: MessageV2.self, name: "v2"))
            #expect(!stopped.finished && stopped.processed == 400 && stopped.deleted == 40)
            // The failed step left nothing: record 401 on are as Message wrote them.
            #expect(try store.read { try $0.record(entity: "Message", id: .uint(401))?["title"] } == .string(originals[401]!.title))
            #expect(try store.read { try $0.get(MessageV2.self, id: 400) } == nil)
            #expect(try store.verify().isEmpty)

            var resumedFrom: FieldValue?
            let done = try store.migrate(MessageV2.self, name: "v2", recordsPerTransaction: 100) { old in
                if resumedFrom == nil { resumedFrom = old.id }
                return try MessageV2.migrated(old)
            }
            #expect(resumedFrom == .uint(401))
            #expect(done.finished && done.rewritten == 960 && done.deleted == 40 && done.total == 1_000)
            #expect(try store.read { try $0.count(MessageV2.self) } == 960)
            #expect(try store.read { try $0.get(MessageV2.self, id: 999) } == expected(originals[999]!))
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func aNewValueWithAnotherIdIsRefusedAndItsStepRolledBack() throws {
        try withMigratableStore(messages: 50) { (store, _) throws in
            #expect {
                try store.migrate(MessageV2.self, name: "renumber") { old in
                    var new = try MessageV2.migrated(old)
                    new.id += 1_000
                    return new
                }
            } throws: { error in
                guard case let FeedstoreError.migrationFailed("Message", "renumber", reason) = error else { return false }
                return reason.contains("keeps ids")
            }
            #expect(try store.migrationProgress(of: MessageV2.self, name: "renumber") == nil)
            #expect(try store.read { try $0.count(entity: "Message") } == 50)
            // Record 1 is as Message wrote it: not yet a MessageV2.
            #expect(try store.read { try $0.record(entity: "Message", id: .uint(1)) }?["subject"] == nil)
            #expect(throws: FeedstoreError.self) { try store.migrate(MessageV2.self, name: "", MessageV2.migrated) }
        }
    }
}
