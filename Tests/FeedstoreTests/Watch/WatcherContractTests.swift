@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The change-batch contract, checked the only way that matters: every batch is applied to a
/// mirror, and after every commit the mirror must equal a fresh query (sections and rows, with
/// values). Random commits of the demo feed's changes, in every watcher configuration, for the
/// typed watcher and the two watchers without the entity's type (values, and indexes only);
/// `IndexWatcherTests` runs the typed indexes-only watcher over the same configurations.
@Suite(.blocking) struct WatcherContractTests {
    struct Configuration: CustomTestStringConvertible, Sendable {
        var name: String
        var query: Query<Message>
        var options: WatchOptions
        /// Whether the query reads the text index that ``SearchableMessage`` declares.
        var searchable = false
        var testDescription: String { name }
        /// The entities to open the store with.
        var entities: [any Entity.Type] { searchable ? SearchableMessage.entities : DemoFeed.entities }
    }

    /// Every shape below, then each again with a filter chosen at run time: an unread flip makes a
    /// message enter or leave it, a folder move or a new date moves it.
    static let configurations: [Configuration] = plainConfigurations + plainConfigurations.enumerated().map { i, c in
        let filter: IndexCondition = i % 2 == 0
            ? .field("isRead") == false && .field("title").contains("RE", caseInsensitive: true)
            : .field("contactId").isIn([1, 2, 3, 5, 8]) || .field("title").hasPrefix("p")
        return Configuration(name: c.name + ", filtered", query: c.query.filter(filter), options: c.options, searchable: c.searchable)
    }

    /// Queries of the words of titles (a text index): one word's range, a word prefix (titles
    /// with two matching words listed once), two words, windowed and reversed.
    static let textConfigurations: [Configuration] = {
        let index = SearchableMessage.byText.definition
        func search(_ text: String, prefix: Bool) -> Query<Message> {
            let (range, filter) = TextSearch(text, lastWordIsPrefix: prefix).query(on: index)
            return Query(index: index.name, range: range, filter: filter)
        }
        var reversed = search("Report", prefix: false)
        reversed.reverse = true
        return [
            Configuration(name: "text: one word", query: search("Report", prefix: false), options: WatchOptions(), searchable: true),
            Configuration(name: "text: one word reversed, windowed", query: reversed,
                          options: WatchOptions(window: WatchWindow(offset: 3, limit: 10)), searchable: true),
            Configuration(name: "text: a word prefix", query: search("re", prefix: true), options: WatchOptions(), searchable: true),
            Configuration(name: "text: a word and a prefix, windowed", query: search("lunch RE", prefix: true),
                          options: WatchOptions(window: WatchWindow(offset: 2, limit: 8)), searchable: true),
        ]
    }()

    static let plainConfigurations: [Configuration] = valueConfigurations + textConfigurations

    static let valueConfigurations: [Configuration] = [
        Configuration(name: "byFolderDate, one section", query: Query(index: "byFolderDate"), options: WatchOptions()),
        Configuration(name: "byFolderDate, a section per folder", query: Query(index: "byFolderDate"), options: WatchOptions(sectionBy: 1)),
        Configuration(name: "byFolderDate reversed, sectioned", query: Query(index: "byFolderDate", reverse: true), options: WatchOptions(sectionBy: 1)),
        Configuration(name: "one folder", query: Query(index: "byFolderDate", range: .prefix(2)), options: WatchOptions()),
        Configuration(name: "folders 2...5, sectioned", query: Query(index: "byFolderDate", range: IndexRange(from: .inclusive([2]), to: .inclusive([5]))),
                      options: WatchOptions(sectionBy: 1)),
        Configuration(name: "unread (partial, descending)", query: Query(index: "unreadByDate"), options: WatchOptions()),
        Configuration(name: "by contact, sectioned", query: Query(index: "byContact"), options: WatchOptions(sectionBy: 1)),
        Configuration(name: "window at the start", query: Query(index: "byFolderDate"), options: WatchOptions(window: WatchWindow(offset: 0, limit: 20))),
        Configuration(name: "window in the middle, sectioned", query: Query(index: "byFolderDate"),
                      options: WatchOptions(sectionBy: 1, window: WatchWindow(offset: 150, limit: 40))),
        Configuration(name: "window at the end, reversed", query: Query(index: "byFolderDate", reverse: true),
                      options: WatchOptions(window: WatchWindow(offset: 370, limit: 50))),
        Configuration(name: "unread window", query: Query(index: "unreadByDate"), options: WatchOptions(window: WatchWindow(offset: 5, limit: 15))),
        Configuration(name: "primary-key order", query: Query(Message.primaryKeyOrder), options: WatchOptions()),
        Configuration(name: "primary-key order reversed, windowed", query: Query(Message.primaryKeyOrder, reverse: true),
                      options: WatchOptions(window: WatchWindow(offset: 30, limit: 25))),
    ]

    /// The query's entries in a fresh read: the range's, kept by the filter's condition tested on
    /// each record's fields by name (not the store's filtered reads), then windowed.
    static func expectedEntries(_ tx: ReadTransaction, _ c: Configuration) throws -> [IndexEntry] {
        let window = c.options.window ?? WatchWindow(offset: 0, limit: .max)
        var entries = try tx.entries(entity: "Message", index: c.query.index, range: c.query.range, reverse: c.query.reverse)
        if let filter = c.query.filter {
            // Its constants in the kinds the fields are stored as (`1` for the unsigned contactId), as a query converts them.
            let converted = try tx.catalog.entities["Message"]!.checkedFilter(filter)
            entries = entries.filter { entry in converted.holds { entry.record[$0] ?? .null } }
        }
        return Array(entries.dropFirst(window.offset).prefix(window.limit))
    }

    /// The expected snapshot: a fresh query grouped into sections.
    static func expected(_ store: Store, _ c: Configuration) throws -> [(key: [FieldValue], rows: [Message])] {
        try store.read { tx in
            let entries = try expectedEntries(tx, c)
            let rows = try entries.map { entry in
                guard case let .uint(id) = entry.id else { throw FeedstoreError.corruptData(what: "test", reason: "id \(entry.id)") }
                return try #require(try tx.get(Message.self, id: id))
            }
            guard c.options.sectionBy > 0 else { return [([], rows)] }
            var sections: [(key: [FieldValue], rows: [Message])] = []
            for (entry, row) in zip(entries, rows) {
                let key = Array(entry.key.prefix(c.options.sectionBy))
                if sections.last?.key == key { sections[sections.count - 1].rows.append(row) } else { sections.append((key, [row])) }
            }
            return sections
        }
    }

    /// The expected snapshot as records by field name, for watchers without the entity's type.
    static func expectedRecords(_ store: Store, _ c: Configuration) throws -> [(key: [FieldValue], rows: [[String: FieldValue]])] {
        try store.read { tx in
            let entries = try expectedEntries(tx, c)
            guard c.options.sectionBy > 0 else { return [([], entries.map(\.record))] }
            var sections: [(key: [FieldValue], rows: [[String: FieldValue]])] = []
            for entry in entries {
                let key = Array(entry.key.prefix(c.options.sectionBy))
                if sections.last?.key == key { sections[sections.count - 1].rows.append(entry.record) } else { sections.append((key, [entry.record])) }
            }
            return sections
        }
    }

    static func check(_ mirror: SectionedMirror<[String: FieldValue]>, _ store: Store, _ c: Configuration, _ context: String) throws {
        let want = try expectedRecords(store, c)
        #expect(mirror.sections.map(\.key) == want.map(\.key), "\(context): section keys")
        #expect(mirror.sections.map(\.rows) == want.map(\.rows), "\(context): records")
    }

    static func check(_ mirror: SectionedMirror<Message>, _ store: Store, _ c: Configuration, _ context: String) throws {
        let want = try expected(store, c)
        let got = mirror.sections
        #expect(got.map(\.key) == want.map(\.key), "\(context): section keys")
        #expect(got.map { $0.rows.map(\.id) } == want.map { $0.rows.map(\.id) }, "\(context): row order")
        #expect(got.map(\.rows) == want.map(\.rows), "\(context): row values")
    }

    /// Seeds crossed with store sizes: a small store empties and creates sections often.
    /// One seed in the quick run, four with `Tools/test --long`.
    static let runs: [(seed: UInt64, messages: Int)] = testSeeds(TestSize.choose(quick: 1, long: 4)).flatMap { [($0, 400), ($0 &+ 1, 25)] }

    @Test(arguments: configurations, runs.indices)
    func batchesKeepAMirrorEqualToAFreshQuery(configuration c: Configuration, run: Int) throws {
        let (seed, messages) = Self.runs[run]
        try withTemporaryDirectory { dir in
            var feed = DemoFeed(seed: seed)
            let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: messages, contacts: 12, entities: c.entities)
            // Odd runs write through a second handle on the same files.
            let writer = run % 2 == 1 ? try Store(path: dir + "/s", entities: c.entities) : store
            let watcher = store.watch(c.query, options: c.options)
            var mirror = SectionedMirror<Message>()
            let initial = try watcher.poll()
            #expect(initial?.isInitial == true)
            try mirror.apply(try #require(initial))
            try Self.check(mirror, store, c, "\(c.name) seed \(seed) messages \(messages) initial")
            // The same query without the entity's type, with values and indexes-only, into the same kind of mirror.
            let dynamic = store.watch(entity: "Message", index: c.query.index, range: c.query.range, reverse: c.query.reverse,
                                      filter: c.query.filter, options: c.options)
            let dynamicIndexes = store.watchIndexes(entity: "Message", index: c.query.index, range: c.query.range, reverse: c.query.reverse,
                                                    filter: c.query.filter, options: c.options)
            var dynamicMirror = SectionedMirror<[String: FieldValue]>(), dynamicIndexMirror = SectionedMirror<[String: FieldValue]>()
            func followDynamic(_ context: String) throws {
                if let batch = try dynamic.poll() { try dynamicMirror.apply(batch) }
                if let batch = try dynamicIndexes.poll() { try dynamicIndexMirror.apply(batch, reading: dynamicIndexes.object(at:)) }
                try Self.check(dynamicMirror, store, c, "\(context), dynamic")
                try Self.check(dynamicIndexMirror, store, c, "\(context), dynamic indexes only")
            }
            try followDynamic("\(c.name) seed \(seed) messages \(messages) initial")
            var delivered = 0
            for commit in 0..<150 {
                let size = Int.random(in: 1...6, using: &feed.generator)
                try writer.write { tx in try feed.mutate(tx, count: size, contacts: 12) }
                // Sometimes let commits pile up, so one batch spans several.
                if Int.random(in: 0..<4, using: &feed.generator) == 0 { continue }
                if let batch = try watcher.poll() {
                    #expect(!batch.isEmpty && !batch.isInitial && !batch.isReset)
                    do { try mirror.apply(batch) } catch {
                        Issue.record("\(c.name) seed \(seed) messages \(messages) commit \(commit): \(error)")
                        return
                    }
                    delivered += 1
                }
                try Self.check(mirror, store, c, "\(c.name) seed \(seed) messages \(messages) commit \(commit)")
                try followDynamic("\(c.name) seed \(seed) messages \(messages) commit \(commit)")
            }
            // Enough batches that the run checked something: fewer for a window, which sees only
            // the changes that reach it.
            let windowed = c.options.window != nil, filtered = c.query.filter != nil || c.searchable
            // A filter leaves fewer rows for the commits to reach (a tenth to a third of them).
            #expect(delivered >= (messages > 100 ? (windowed ? (filtered ? 0 : 10) : (filtered ? 5 : 20)) : (windowed || filtered ? 0 : 5)),
                    "\(c.name) seed \(seed): \(delivered) batches")
        }
    }
}
