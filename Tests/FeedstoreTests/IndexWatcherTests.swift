@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import Foundation
import Testing

/// Indexes-only watchers: batches of ranges applied to a mirror of ids (filled through
/// `object(at:)`), compared with a fresh query after every commit, in every configuration.
@Suite struct IndexWatcherTests {
    /// Row ids by section, kept in step with `IndexBatch`es by the contract's rules.
    struct IndexMirror {
        var sections: [[UInt64]] = []

        mutating func apply(_ batch: IndexBatch, reading watcher: IndexWatcher<Message>) throws {
            if batch.isInitial || batch.isReset { sections = [] }
            var removals: [(RowPath, UInt64?)] = []
            for range in batch.deletes { for row in range.rows { removals.append((RowPath(section: range.section, row: row), nil)) } }
            for move in batch.moves { removals.append((move.from, nil)) }
            for (path, _) in removals.sorted(by: { $0.0 > $1.0 }) {
                guard sections.indices.contains(path.section), sections[path.section].indices.contains(path.row) else {
                    throw SectionedMirror<Message>.InvalidBatch(description: "old path \(path) out of bounds")
                }
                sections[path.section].remove(at: path.row)
            }
            for index in batch.sectionDeletes.sorted(by: >) {
                guard sections.indices.contains(index), sections[index].isEmpty else {
                    throw SectionedMirror<Message>.InvalidBatch(description: "section delete \(index)")
                }
                sections.remove(at: index)
            }
            for insert in batch.sectionInserts.sorted(by: { $0.index < $1.index }) { sections.insert([], at: insert.index) }
            var additions = batch.moves.map(\.to)
            for range in batch.inserts { for row in range.rows { additions.append(RowPath(section: range.section, row: row)) } }
            for path in additions.sorted() {
                guard sections.indices.contains(path.section), path.row <= sections[path.section].count else {
                    throw SectionedMirror<Message>.InvalidBatch(description: "new path \(path) out of bounds")
                }
                sections[path.section].insert(0, at: path.row)  // filled below
            }
            for path in additions {
                sections[path.section][path.row] = try #require(try watcher.object(at: path)).id
            }
            #expect(watcher.numberOfSections == sections.count)
            for (i, rows) in sections.enumerated() { #expect(watcher.numberOfObjects(inSection: i) == rows.count) }
        }
    }

    @Test(arguments: WatcherContractTests.configurations, [UInt64(3), 4])
    func rangesAndObjectsKeepAMirrorEqualToAFreshQuery(configuration c: WatcherContractTests.Configuration, seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            var feed = DemoFeed(seed: seed)
            let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: seed == 3 ? 400 : 30, contacts: 12)
            let watcher = store.watchIndexes(c.query, options: c.options)
            var mirror = IndexMirror()
            for commit in 0..<80 {
                if let batch = try watcher.poll() {
                    #expect(commit == 0 ? batch.isInitial : !batch.isInitial)
                    try mirror.apply(batch, reading: watcher)
                }
                let want = try WatcherContractTests.expected(store, c).map { $0.rows.map(\.id) }
                #expect(mirror.sections.filter { !$0.isEmpty || c.options.sectionBy == 0 } == want.filter { !$0.isEmpty || c.options.sectionBy == 0 },
                        "\(c.name) seed \(seed) commit \(commit)")
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
            let grown = anonymousMemory() - before
            print("indexes-only watcher over 200,000 rows: anonymous memory grew \(grown) bytes")
            // Generous: other tests run in parallel in this process and allocate too.
            #expect(grown < 32 << 20, "anonymous memory grew \(grown) bytes")
            watcher.cancel()
        }
    }
}
