@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Indexes-only watchers: batches of ranges applied to the mirror (rows read through
/// `object(at:)`), compared with a fresh query after every commit, in every configuration.
@Suite(.blocking) struct IndexWatcherTests {
    /// Applies an indexes-only batch to the one mirror of every kind, reading rows from the
    /// watcher's snapshot, and checks the watcher's section and row counts against it.
    static func apply(_ batch: IndexBatch, to mirror: inout SectionedMirror<Message>, reading watcher: IndexWatcher<Message>) throws {
        try mirror.apply(batch, reading: watcher.object(at:))
        #expect(watcher.numberOfSections == mirror.sections.count)
        for (i, section) in mirror.sections.enumerated() { #expect(watcher.numberOfObjects(inSection: i) == section.rows.count) }
        #expect(watcher.shownLayout.checkInvariants().isEmpty, "\(watcher.shownLayout.checkInvariants())")
        // Rows by position across sections: the mirror's rows in order, with their paths.
        let shown = mirror.sections.enumerated().flatMap { s, section in section.rows.indices.map { (RowPath(section: s, row: $0), section.rows[$0]) } }
        let read = try watcher.objects(at: -1 ..< shown.count + 1)
        #expect(read.map(\.path) == shown.map(\.0) && read.map(\.object) == shown.map(\.1), "objects(at:) across sections")
    }

    @Test(arguments: WatcherContractTests.configurations, [UInt64(3), 4])
    func rangesAndObjectsKeepAMirrorEqualToAFreshQuery(configuration c: WatcherContractTests.Configuration, seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            var feed = DemoFeed(seed: seed)
            let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: seed == 3 ? 400 : 30, contacts: 12, entities: c.entities)
            let watcher = store.watchIndexes(c.query, options: c.options)
            var mirror = SectionedMirror<Message>()
            for commit in 0..<80 {
                if let batch = try watcher.poll() {
                    #expect(commit == 0 ? batch.isInitial : !batch.isInitial)
                    try Self.apply(batch, to: &mirror, reading: watcher)
                }
                try WatcherContractTests.check(mirror, store, c, "\(c.name) seed \(seed) commit \(commit), indexes only")
                try store.write { tx in try feed.mutate(tx, count: Int.random(in: 1...5, using: &feed.generator), contacts: 12) }
            }
        }
    }

    @Test func objectsComeFromTheSnapshotOfTheLastBatchTaken() throws {
        try withTemporaryDirectory { dir in
            var feed = DemoFeed(seed: 8)
            let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: 300, contacts: 5)
            let watcher = store.watchIndexes(Query(Message.self, index: "byFolderDate"), options: WatchOptions(sectionBy: 1))
            let initial = try #require(try watcher.poll())
            #expect(initial.inserts.count == initial.sectionInserts.count, "one range per section")
            let shown = try (0..<watcher.numberOfSections).map { s in
                try (0..<watcher.numberOfObjects(inSection: s)).map { try watcher.object(at: RowPath(section: s, row: $0))!.id }
            }
            // Commits the consumer has not taken yet change nothing it reads.
            for _ in 0..<30 { try store.write { tx in try feed.mutate(tx, count: 5, contacts: 5) } }
            let still = try (0..<watcher.numberOfSections).map { s in
                try (0..<watcher.numberOfObjects(inSection: s)).map { try watcher.object(at: RowPath(section: s, row: $0))!.id }
            }
            #expect(still == shown)
            watcher.cancel()
        }
    }

    @Test func anIndexesOnlyWatcherKeepsItsMemoryFlat() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities, options: StoreOptions(durability: .none))
            var feed = DemoFeed(seed: 9)
            try feed.populate(store, messages: 200_000, contacts: 100, batch: 10_000)
            let before = anonymousMemory()
            let watcher = store.watchIndexes(Query(Message.self, index: "byFolderDate"))
            let initial = try #require(try watcher.poll())
            #expect(initial.inserts.map(\.rows.count) == [200_000])
            for _ in 0..<200 {
                try store.write { tx in try feed.mutate(tx, count: 2, contacts: 100) }
                _ = try watcher.poll()
                _ = try watcher.object(at: RowPath(section: 0, row: 100_000))
            }
            // Generous: other tests run in parallel in this process and allocate too.
            let grown = anonymousMemoryGrowth(since: before, settlingBelow: 32 << 20)
            print("indexes-only watcher over 200,000 rows: anonymous memory grew \(grown) bytes")
            #expect(grown < 32 << 20, "anonymous memory grew \(grown) bytes")
            watcher.cancel()
        }
    }
}
