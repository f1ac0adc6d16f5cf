@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Observation
import Testing

/// Single-record observation, related records, and the adapters (CollectionDifference, LiveResults).
@Suite(.blocking) struct WatcherAdapterTests {
    @Test func observingOneRecord() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities)
            try store.write { tx in for i in 1...3 { try tx.put(scenarioMessage(UInt64(i), minute: Double(i), contact: 1)) } }
            let observer = store.observe(Message.self, id: 2)
            guard case let .initial(value)? = try observer.poll() else { Issue.record("no initial value"); return }
            #expect(value?.title == "m2")
            #expect(try observer.poll() == nil)
            try store.write { tx in try tx.put(scenarioMessage(3, minute: 9, contact: 1)) }
            #expect(try observer.poll() == nil, "another record changed")
            try store.write { tx in try tx.put(scenarioMessage(2, minute: 2, contact: 1, title: "renamed")) }
            guard case let .updated(updated, fields)? = try observer.poll() else { Issue.record("no update"); return }
            #expect(updated.title == "renamed" && fields == ["title"])
            try store.write { tx in try tx.delete(Message.self, id: 2) }
            guard case .deleted? = try observer.poll() else { Issue.record("no delete"); return }
            try store.write { tx in try tx.put(scenarioMessage(2, minute: 2, contact: 1)) }
            guard case .inserted? = try observer.poll() else { Issue.record("no insert"); return }
        }
    }

    @Test(arguments: [nil, WatchWindow(offset: 1, limit: 4)])
    func aChangedContactUpdatesExactlyTheRowsShowingIt(window: WatchWindow?) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities)
            try store.write { tx in
                for c in 1...3 { try tx.put(Contact(id: UInt64(c), name: "c\(c)")) }
                for i in 1...9 { try tx.put(scenarioMessage(UInt64(i), folder: i == 9 ? 2 : 1, minute: Double(i), contact: UInt64(i % 3 + 1))) }
            }
            let query = Query(Message.self, index: "byFolderDate", range: .prefix(1))
            let watcher = store.watch(query, options: WatchOptions(window: window, related: [RelatedRecords(Contact.self, through: "byContact")]))
            var mirror = SectionedMirror<Message>()
            try mirror.apply(try #require(try watcher.poll()))
            try store.write { tx in try tx.put(Contact(id: 2, name: "renamed")) }
            let batch = try #require(try watcher.poll())
            let shown = Set(mirror.rows.filter { $0.contactId == 2 }.map(\.id))
            #expect(Set(batch.updates.map(\.id)) == shown && !shown.isEmpty)
            #expect(batch.updates.allSatisfy { $0.fields == ["Contact"] && $0.from == $0.to })
            #expect(batch.inserts.isEmpty && batch.deletes.isEmpty && batch.moves.isEmpty)
            try mirror.apply(batch)
            // A contact nobody in the query shows changes nothing.
            try store.write { tx in try tx.put(Contact(id: 3, name: "also renamed")) }
            let other = try watcher.poll()
            #expect(Set(other?.updates.map(\.id) ?? []) == Set(mirror.rows.filter { $0.contactId == 3 }.map(\.id)))
        }
    }

    @Test func singleSectionBatchesAreCollectionDifferences() throws {
        try withTemporaryDirectory { dir in
            var feed = DemoFeed(seed: 31)
            let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: 150, contacts: 5)
            let query = Query(Message.self, index: "unreadByDate")
            let watcher = store.watch(query)
            var ids: [UInt64] = []
            var applied = 0
            for _ in 0..<120 {
                if let batch = try watcher.poll() {
                    let difference = try #require(batch.difference())
                    ids = try #require(ids.applying(difference))
                    applied += 1
                }
                #expect(ids == (try store.read { try $0.query(Message.self, index: "unreadByDate") }).map(\.id))
                try store.write { tx in try feed.mutate(tx, count: 2, contacts: 5) }
            }
            #expect(applied > 50)
            // A sectioned batch with section changes has no single-collection form.
            let sectioned = store.watch(Query(Message.self, index: "byFolderDate"), options: WatchOptions(sectionBy: 1))
            #expect(try sectioned.poll()?.difference() == nil)
        }
    }

    /// Synchronous writes, callable from async tests.
    static func mutate(_ store: Store, seed: UInt64, commits: Int) throws {
        var feed = DemoFeed(seed: seed)
        for _ in 0..<commits { try store.write { tx in try feed.mutate(tx, count: 3, contacts: 5) } }
    }

    @Test func liveResultsFollowTheStoreAndNotifyObservers() async throws {
        let dir = NSTemporaryDirectory() + "feedstore-tests-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try Store(path: dir, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
        try Self.mutate(store, seed: 5, commits: 0)
        var feed = DemoFeed(seed: 5)
        try feed.populate(store, messages: 100, contacts: 5)
        let query = Query(Message.self, index: "byFolderDate", range: .prefix(3))
        let results = await MainActor.run { LiveResults(store: store, query: query) }
        let changed = Protected(0)
        await MainActor.run {
            withObservationTracking {
                _ = MainActor.assumeIsolated { results.rows }
            } onChange: {
                changed.withLock { $0 += 1 }
            }
        }
        try Self.mutate(store, seed: 6, commits: 20)
        let want = try await store.read { try $0.query(Message.self, index: "byFolderDate", range: .prefix(3)) }
        let deadline = Date().addingTimeInterval(600)
        while await MainActor.run(body: { results.rows }) != want && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(await MainActor.run(body: { results.rows }) == want)
        #expect(changed.current == 1, "observers are told the rows changed")
        await MainActor.run { results.stop() }
    }

    /// Results opened with a window hold only that page, and move it page by page.
    @Test func windowedLiveResultsTurnPages() async throws {
        try await withTemporaryDirectory { dir in
            let store = try populatedDemoStore(at: dir + "/s", seed: 9, messages: 300, contacts: 5)
            defer { store.close() }
            let query = Query(Message.self, index: "byFolderDate")
            let all = try await store.read { try $0.objects(in: query) }
            let results = await MainActor.run {
                LiveResults(store: store, query: query, options: WatchOptions(window: WatchWindow(offset: 0, limit: 40)))
            }
            func showsPage(_ offset: Int) async throws {
                let want = Array(all.dropFirst(offset).prefix(40))
                let deadline = Date().addingTimeInterval(600)
                while await MainActor.run(body: { results.rows }) != want && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
                #expect(await MainActor.run(body: { results.rows }) == want, "page at \(offset)")
                #expect(await MainActor.run(body: { results.window?.offset }) == offset)
            }
            try await showsPage(0)
            await MainActor.run { results.nextPage() }
            try await showsPage(40)
            await MainActor.run { results.nextPage() }
            try await showsPage(80)
            await MainActor.run { results.previousPage() }
            try await showsPage(40)
            await MainActor.run { results.setWindow(offset: 280, limit: 40) }
            try await showsPage(280)
            await MainActor.run { results.stop() }
        }
    }

    /// Main-actor state a view controller holds: a mirror that delivery applies batches to directly.
    @MainActor final class MainActorDataSource {
        var mirror = SectionedMirror<Message>()
        var batches = 0
    }

    /// Delivery on the main actor hands each batch to main-actor code as it is, in order, and
    /// the mirror it keeps ends equal to the query.
    @Test func mainActorDeliveryKeepsAMainActorMirrorInStep() async throws {
        try await withTemporaryDirectory { dir in
            let store = try populatedDemoStore(at: dir + "/s", seed: 12, messages: 200, contacts: 5)
            defer { store.close() }
            let query = Query(Message.self, index: "byFolderDate")
            let source = await MainActorDataSource()
            let subscription = store.watch(query, options: WatchOptions(sectionBy: 1)).deliverOnMainActor { batch in
                MainActor.assertIsolated()
                do { try source.mirror.apply(batch) } catch { Issue.record("the batch did not apply: \(error)") }
                source.batches += 1
            }
            defer { subscription.cancel() }
            func rows() async -> [Message] { await MainActor.run { source.mirror.sections.flatMap(\.rows) } }
            // The snapshot first, then the changes. Delivery runs on Swift concurrency's shared
            // threads, which long synchronous tests running beside this one may hold for minutes.
            var deadline = Date().addingTimeInterval(600)
            while await MainActor.run(body: { source.batches }) == 0 && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
            try Self.mutate(store, seed: 13, commits: 30)
            let want = try await store.read { try $0.objects(in: query) }
            deadline = Date().addingTimeInterval(600)
            while await rows() != want && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
            #expect(await rows() == want)
            #expect(await MainActor.run { source.batches } >= 2, "the snapshot, then changes")
        }
    }
}
