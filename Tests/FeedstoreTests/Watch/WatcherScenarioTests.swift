@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Named situations that break other live-query systems, each checked for the exact batch and
/// against a fresh query.
@Suite(.blocking) struct WatcherScenarioTests {
    /// A store with messages 1...6 in folder 1 (newest first: 6, 5, 4, 3, 2, 1), one in folder 3.
    func withFeed(_ body: (Store) throws -> Void) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities, options: StoreOptions(durability: .none))
            try store.write { tx in
                for i in 1...6 { try tx.put(scenarioMessage(UInt64(i), minute: Double(i))) }
                try tx.put(scenarioMessage(7, folder: 3, minute: 7))
            }
            try body(store)
        }
    }

    func expectMatches(_ mirror: SectionedMirror<Message>, _ store: Store, _ query: Query<Message>, sectionBy: Int = 0) throws {
        let c = WatcherContractTests.Configuration(name: "", query: query, options: WatchOptions(sectionBy: sectionBy))
        try WatcherContractTests.check(mirror, store, c, "scenario")
    }

    func start(_ store: Store, _ query: Query<Message>, _ options: WatchOptions = WatchOptions()) throws -> (Watcher<Message>, SectionedMirror<Message>) {
        let watcher = store.watch(query, options: options)
        var mirror = SectionedMirror<Message>()
        try mirror.apply(try #require(try watcher.poll()))
        return (watcher, mirror)
    }

    /// Neighbours swapping is one move (the other row's relative order is unchanged, so it is an
    /// update); rows swapping across others are two moves, as each passes the rows between.
    @Test func twoRowsSwappingPositions() throws {
        try withFeed { store in
            let query = Query(Message.self, index: "byFolderDate", range: .prefix(1))
            var (watcher, mirror) = try start(store, query)
            try store.write { tx in
                try tx.put(scenarioMessage(3, minute: 4))
                try tx.put(scenarioMessage(4, minute: 3))
            }
            var batch = try #require(try watcher.poll())
            #expect(batch.moves.count == 1 && batch.updates.count == 1 && batch.inserts.isEmpty && batch.deletes.isEmpty)
            try mirror.apply(batch)
            try expectMatches(mirror, store, query)
            try store.write { tx in
                try tx.put(scenarioMessage(2, minute: 5))
                try tx.put(scenarioMessage(5, minute: 2))
            }
            batch = try #require(try watcher.poll())
            #expect(batch.moves.count == 2 && batch.updates.isEmpty && batch.inserts.isEmpty && batch.deletes.isEmpty)
            try mirror.apply(batch)
            try expectMatches(mirror, store, query)
        }
    }

    @Test func aRowMovingAndChangingIsOneMoveCarryingItsFields() throws {
        try withFeed { store in
            let query = Query(Message.self, index: "byFolderDate", range: .prefix(1))
            var (watcher, mirror) = try start(store, query)
            try store.write { tx in try tx.put(scenarioMessage(1, minute: 60, title: "now newest")) }
            let batch = try #require(try watcher.poll())
            #expect(batch.moves.count == 1 && batch.updates.isEmpty)
            #expect(batch.moves.first?.fields == ["date", "title"])
            #expect(batch.moves.first?.from == RowPath(section: 0, row: 5) && batch.moves.first?.to == RowPath(section: 0, row: 0))
            #expect(batch.moves.first?.value.title == "now newest")
            try mirror.apply(batch)
            try expectMatches(mirror, store, query)
        }
    }

    @Test func deleteAndReinsertOfOneIDInOneCommit() throws {
        try withFeed { store in
            let query = Query(Message.self, index: "byFolderDate", range: .prefix(1))
            var (watcher, mirror) = try start(store, query)
            try store.write { tx in
                try tx.delete(Message.self, id: 3)
                try tx.insert(scenarioMessage(3, minute: 3, title: "again"))
            }
            let batch = try #require(try watcher.poll())
            #expect(batch.inserts.isEmpty && batch.deletes.isEmpty && batch.moves.isEmpty)
            #expect(batch.updates.map(\.id) == [3] && batch.updates.first?.value.title == "again")
            try mirror.apply(batch)
            try expectMatches(mirror, store, query)
        }
    }

    @Test func aSectionEmptiedAndAnotherCreatedInOneCommit() throws {
        try withFeed { store in
            let query = Query(Message.self, index: "byFolderDate")
            var (watcher, mirror) = try start(store, query, WatchOptions(sectionBy: 1))
            #expect(mirror.sections.map(\.key) == [[1], [3]])
            try store.write { tx in try tx.put(scenarioMessage(7, folder: 9, minute: 7)) }
            let batch = try #require(try watcher.poll())
            #expect(batch.sectionDeletes == [1] && batch.sectionInserts.map(\.index) == [1] && batch.sectionInserts.first?.key == [9])
            #expect(batch.moves.count == 1 && batch.moves.first?.from == RowPath(section: 1, row: 0))
            try mirror.apply(batch)
            try expectMatches(mirror, store, query, sectionBy: 1)
        }
    }

    /// NSFetchedResultsController misses objects that start matching its predicate after a save
    /// elsewhere; here a second handle flips a message to unread and it appears.
    @Test func aRecordNewlyEnteringAPartialIndexFromASecondHandle() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities)
            try store.write { tx in for i in 1...4 { try tx.put(scenarioMessage(UInt64(i), minute: Double(i), read: true)) } }
            let query = Query(Message.self, index: "unreadByDate")
            var (watcher, mirror) = try start(store, query)
            #expect(mirror.rows.isEmpty)
            let other = try Store(path: dir + "/s", entities: DemoFeed.entities)
            try other.write { tx in try tx.put(scenarioMessage(2, minute: 2, read: false)) }
            let batch = try #require(try watcher.poll())
            #expect(batch.inserts.map(\.id) == [2])
            try mirror.apply(batch)
            try expectMatches(mirror, store, query)
        }
    }

    @Test func aWindowShiftedByAnInsertBeforeIt() throws {
        try withFeed { store in
            let query = Query(Message.self, index: "byFolderDate", range: .prefix(1))
            let options = WatchOptions(window: WatchWindow(offset: 2, limit: 3))
            var (watcher, mirror) = try start(store, query, options)
            #expect(mirror.rows.map(\.id) == [4, 3, 2])
            // A new newest message pushes every row down one place.
            try store.write { tx in try tx.put(scenarioMessage(10, minute: 100)) }
            let batch = try #require(try watcher.poll())
            #expect(batch.inserts.map(\.id) == [5] && batch.inserts.first?.path == RowPath(section: 0, row: 0))
            #expect(batch.deletes.map(\.id) == [2] && batch.deletes.first?.path == RowPath(section: 0, row: 2))
            try mirror.apply(batch)
            #expect(mirror.rows.map(\.id) == [5, 4, 3])
            // A change after the window changes nothing shown.
            try store.write { tx in try tx.put(scenarioMessage(1, minute: 1, title: "far away")) }
            #expect(try watcher.poll() == nil)
        }
    }

    @Test func pagingAWindowIsABatch() throws {
        try withFeed { store in
            let query = Query(Message.self, index: "byFolderDate")
            var (watcher, mirror) = try start(store, query, WatchOptions(sectionBy: 1, window: WatchWindow(offset: 0, limit: 4)))
            #expect(mirror.rows.map(\.id) == [6, 5, 4, 3])
            watcher.setWindow(offset: 4, limit: 4)
            let batch = try #require(try watcher.poll())
            #expect(batch.deletes.count == 4 && batch.inserts.map(\.id) == [2, 1, 7])
            #expect(batch.sectionInserts.map(\.key) == [[3]])
            try mirror.apply(batch)
            #expect(mirror.sections.map(\.key) == [[1], [3]] && mirror.rows.map(\.id) == [2, 1, 7])
        }
    }

    @Test func aBurstOfTenThousandCommitsIsOneCoalescedBatch() throws {
        try withFeed { store in
            let query = Query(Message.self, index: "byFolderDate")
            var (watcher, mirror) = try start(store, query, WatchOptions(sectionBy: 1))
            let start = watcher.sequence
            for i in 0..<10_000 {
                let id = UInt64(i % 7 + 1)
                try store.write { tx in try tx.put(scenarioMessage(id, folder: Int64(i % 3), minute: Double(i), title: "t\(i)")) }
            }
            let head = try store.read { try $0.journalBounds().last }
            #expect(head == start + 10_000)
            let batch = try #require(try watcher.poll())
            #expect(batch.fromSequence == start && batch.toSequence == head)
            try mirror.apply(batch)
            try expectMatches(mirror, store, query, sectionBy: 1)
            #expect(try watcher.poll() == nil)
        }
    }

    @Test func fieldFilteringDropsUpdatesOfUnshownFields() throws {
        try withFeed { store in
            let query = Query(Message.self, index: "byFolderDate", range: .prefix(1))
            var (watcher, mirror) = try start(store, query, WatchOptions(fields: ["title"]))
            try store.write { tx in try tx.put(scenarioMessage(4, minute: 4, read: true)) }
            #expect(try watcher.poll() == nil, "only isRead changed")
            try store.write { tx in try tx.put(scenarioMessage(4, minute: 4, read: true, title: "renamed")) }
            let batch = try #require(try watcher.poll())
            #expect(batch.updates.map(\.fields) == [["title"]])
            try mirror.apply(batch)
            #expect(mirror.rows.first { $0.id == 4 }?.title == "renamed")
        }
    }

    /// The change feed folds this process's commits as they are made, so a watcher that took
    /// no batch while the journal was trimmed past it still gets an exact batch.
    @Test func aWatcherPastTheRetentionOfLocalCommitsStaysExact() throws {
        try withTemporaryDirectory { dir in
            let retention = JournalRetention(minimumCommits: 1, maximumCommits: 5)
            var feed = DemoFeed(seed: 8)
            let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: 100, contacts: 3, options: StoreOptions(durability: .none, journalRetention: retention))
            let query = Query(Message.self, index: "byFolderDate")
            var (watcher, mirror) = try start(store, query)
            for _ in 0..<30 { try store.write { tx in try feed.mutate(tx, count: 2, contacts: 3) } }
            #expect(try store.read { try $0.journalBounds().first } > watcher.sequence + 1, "the journal was trimmed past the watcher")
            let batch = try #require(try watcher.poll())
            #expect(!batch.isReset)
            try mirror.apply(batch)
            try expectMatches(mirror, store, query)
        }
    }

    /// Another process's commits that were trimmed before this process read them cannot be
    /// folded: the watcher gets a reset, the whole new snapshot.
    @Test func aWatcherBehindTheRetentionOfAnotherProcessesCommitsGetsAReset() throws {
        try withTemporaryDirectory { dir in
            var feed = DemoFeed(seed: 8)
            let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: 100, contacts: 3)
            let query = Query(Message.self, index: "byFolderDate")
            var (watcher, mirror) = try start(store, query)
            let child = try runTool(storectlURL, ["demo", "mutate", dir + "/s", "--commits", "30", "--per-commit", "2", "--seed", "3",
                                                  "--durability", "none", "--keep-commits", "5", "--quiet"])
            #expect(child.status == 0, "\(child.stderr)")
            #expect(try store.read { try $0.journalBounds().first } > watcher.sequence + 1, "the journal was trimmed past the watcher")
            let batch = try #require(try watcher.poll())
            #expect(batch.isReset)
            try mirror.apply(batch)
            try expectMatches(mirror, store, query)
        }
    }

    @Test func asyncIterationAndCallbacksFollowConcurrentWriters() async throws {
        try await withTemporaryDirectory { dir in
            let store = try populatedDemoStore(at: dir + "/s", seed: 2, messages: 200, contacts: 5)
            let query = Query(Message.self, index: "byFolderDate")
            // Callback delivery on a queue, into a mirror.
            let callbackMirror = Protected(SectionedMirror<Message>())
            let subscription = store.watch(query, options: WatchOptions(sectionBy: 1), queue: DispatchQueue(label: "ui")) { batch in
                callbackMirror.withLock { try? $0.apply(batch) }
            }
            // Async iteration in a task, while a writer commits.
            let watcher = store.watch(query, options: WatchOptions(sectionBy: 1))
            let reader = Task { () -> SectionedMirror<Message> in
                var mirror = SectionedMirror<Message>()
                for try await batch in watcher { try mirror.apply(batch) }
                return mirror
            }
            for _ in 0..<60 {
                try await store.write { tx in
                    var local = DemoFeed(seed: UInt64.random(in: 1...1_000_000))
                    try local.mutate(tx, count: 3, contacts: 5)
                }
            }
            let head = try await store.read { try $0.journalBounds().last }
            // Both catch up with the head within a generous bound, then stop on cancel.
            let deadline = Date().addingTimeInterval(10)
            while (watcher.sequence < head || callbackMirror.current.sequence < head) && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
            watcher.cancel()
            subscription.cancel()
            let mirror = try await reader.value
            let c = WatcherContractTests.Configuration(name: "", query: query, options: WatchOptions(sectionBy: 1))
            try WatcherContractTests.check(mirror, store, c, "async")
            try WatcherContractTests.check(callbackMirror.current, store, c, "callback")
        }
    }
}
