@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Observation
import Testing

/// The lazy list against fresh queries: after every batch of random commits, its count, its
/// sections and every row it holds decoded equal what a new query of the same snapshot returns,
/// in every shape of query (sectioned, reversed, windowed), with a cache small enough to be
/// evicted and refilled between batches.
@Suite(.blocking) struct LazyLiveListTests {
    enum Shape: String, CaseIterable, CustomTestStringConvertible {
        case plain, sectioned, reversedSectioned, unread, windowed

        var testDescription: String { rawValue }

        var query: Query<Message> {
            switch self {
            case .plain, .windowed: Query(Message.self, index: "byFolderDate")
            case .sectioned: Query(Message.self, index: "byFolderDate")
            case .reversedSectioned: Query(Message.self, index: "byFolderDate", reverse: true)
            case .unread: Query(Message.self, index: "unreadByDate")
            }
        }

        var options: WatchOptions {
            switch self {
            case .plain, .unread: WatchOptions()
            case .sectioned, .reversedSectioned: WatchOptions(sectionBy: 1)
            case .windowed: WatchOptions(window: WatchWindow(offset: 300, limit: 500))
            }
        }
    }

    /// What the list must show: the query's rows (a window's part of them) and their sections.
    func expected(_ shape: Shape, in store: Store) throws -> (rows: [Message], sections: [[FieldValue]]) {
        var rows = try store.read { try $0.objects(in: shape.query) }
        if case .windowed = shape, let window = shape.options.window {
            rows = Array(rows.dropFirst(window.offset).prefix(window.limit))
        }
        guard shape.options.sectionBy > 0 else { return (rows, [[]]) }
        var keys: [[FieldValue]] = []
        for row in rows where keys.last != [.int(row.folder)] { keys.append([.int(row.folder)]) }
        return (rows, keys)
    }

    @MainActor
    func check(_ list: LazyLiveList<Message>, _ shape: Shape, in store: Store, seed: UInt64, step: Int) throws {
        let (rows, keys) = try expected(shape, in: store)
        let context = "seed \(seed), step \(step)"
        #expect(list.checkInvariants() == [], "\(context)")
        #expect(list.count == rows.count, "\(context)")
        #expect(list.sections.map(\.key) == keys, "\(context)")
        #expect(list.sections.map(\.count).reduce(0, +) == rows.count, "\(context)")
        for (position, row) in list.cachedRows where position >= rows.count || row != rows[position] {
            Issue.record("\(context): row \(position) is \(row.id), the query has \(position < rows.count ? "\(rows[position].id)" : "nothing")")
        }
    }

    @Test(arguments: Shape.allCases) @MainActor
    func cachedRowsFollowEveryBatch(shape: Shape) throws {
        for seed in testSeeds(3) {
            try withTemporaryDirectory { dir in
                var feed = DemoFeed(seed: seed)
                let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: 1_500, contacts: 20)
                defer { store.close() }
                let list = LazyLiveList(store: store, query: shape.query, options: shape.options, cacheSize: 120, pageSize: 16)
                defer { list.stop() }
                var rng = SeededGenerator(seed: seed ^ 0xA5A5)
                try check(list, shape, in: store, seed: seed, step: 0)
                for step in 1...40 {
                    // Read some rows, a few pages apart, so the cache holds rows across the list.
                    for _ in 0..<Int.random(in: 1...6, using: &rng) where list.count > 0 {
                        let position = Int.random(in: 0..<list.count, using: &rng)
                        #expect(list[position] == (try store.read { try expectedRow(shape, at: position, in: $0) }), "seed \(seed), step \(step)")
                    }
                    try store.write { tx in try feed.mutate(tx, count: Int.random(in: 1...12, using: &rng), contacts: 20) }
                    try list.update()
                    try check(list, shape, in: store, seed: seed, step: step)
                }
            }
        }
    }

    /// A table view that is given each batch's `TableUpdates` through `onUpdates` (UIKit's rules,
    /// applied to the ids it shows) shows what the list holds, which is what a fresh query gives.
    @Test @MainActor func onUpdatesHandsATableEachBatch() throws {
        try withTemporaryDirectory { dir in
            var feed = DemoFeed(seed: 71)
            let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: 500, contacts: 20)
            defer { store.close() }
            let list = LazyLiveList(store: store, query: Query(Message.self, index: "byFolderDate"), options: WatchOptions(sectionBy: 1))
            defer { list.stop() }
            var handed: [TableUpdates] = []
            list.onUpdates = { handed.append($0) }
            var shown = try TableUpdatesTests.sections(in: store)
            for step in 0..<30 {
                try store.write { tx in try feed.mutate(tx, count: 1 + step % 5, contacts: 20) }
                try list.update()
                let fresh = try TableUpdatesTests.sections(in: store)
                #expect(handed.count <= 1, "step \(step): \(handed.count) updates for one commit")
                for updates in handed { shown = try TableUpdatesTests.apply(updates, to: shown, fresh: fresh) }
                handed = []
                #expect(shown == fresh, "step \(step)")
                #expect(list.sections.map(\.count) == fresh.map(\.count), "step \(step)")
            }
        }
    }

    func expectedRow(_ shape: Shape, at position: Int, in tx: ReadTransaction) throws -> Message? {
        try tx.object(at: position + (shape.options.window?.offset ?? 0), in: shape.query)
    }

    @Test @MainActor func positionsOfIdsAndPathsAgreeWithTheQuery() throws {
        try withTemporaryDirectory { dir in
            let store = try populatedDemoStore(at: dir + "/s", seed: 5, messages: 800, contacts: 10)
            defer { store.close() }
            let query = Query(Message.self, index: "byFolderDate")
            let list = LazyLiveList(store: store, query: query, options: WatchOptions(sectionBy: 1), cacheSize: 64, pageSize: 8)
            defer { list.stop() }
            let rows = try store.read { try $0.objects(in: query) }
            for (position, row) in rows.enumerated() where position % 37 == 0 {
                #expect(try list.position(of: row.id) == position)
                let path = list.path(of: position)
                #expect(list.position(of: path) == position)
                #expect(try list.element(at: path) == row)
                #expect(list.sections[path.section].start + path.row == position)
            }
            #expect(try list.position(of: 9_999_999) == nil)
            #expect(list.cachedCount <= 64 + 64 / 4)
            #expect(Array(list.prefix(3)) == Array(rows.prefix(3)))
        }
    }

    /// A windowed lazy list moves its window: its rows are the query's rows at the new positions,
    /// cached rows the move keeps included.
    @Test @MainActor func aWindowedListMovesItsWindow() throws {
        try withTemporaryDirectory { dir in
            let store = try populatedDemoStore(at: dir + "/s", seed: 12, messages: 900, contacts: 10)
            defer { store.close() }
            let query = Query(Message.self, index: "byFolderDate")
            let all = try store.read { try $0.objects(in: query) }
            let list = LazyLiveList(store: store, query: query, options: WatchOptions(window: WatchWindow(offset: 100, limit: 200)),
                                    cacheSize: 64, pageSize: 16)
            defer { list.stop() }
            for offset in [100, 150, 600, 750, 0] {
                if offset != 100 { try list.setWindow(offset: offset, limit: 200) }
                let want = Array(all.dropFirst(offset).prefix(200))
                #expect(list.count == want.count, "window at \(offset)")
                #expect(list.checkInvariants() == [])
                for (position, row) in list.cachedRows { #expect(row == want[position], "window at \(offset), row \(position)") }
                for position in stride(from: 0, to: list.count, by: 37) { #expect(list[position] == want[position]) }
            }
        }
    }

    /// Observation fires for a change to a row a view read, and not for a change to a row it
    /// did not read that shifts nothing.
    @Test @MainActor func observationFiresForARowThatWasRead() throws {
        try withTemporaryDirectory { dir in
            let store = try populatedDemoStore(at: dir + "/s", seed: 8, messages: 600, contacts: 10)
            defer { store.close() }
            let query = Query(Message.self, index: "byFolderDate")
            let list = LazyLiveList(store: store, query: query, cacheSize: 100, pageSize: 10)
            defer { list.stop() }
            func toggleRead(at position: Int) throws {
                try store.write { tx in
                    var m = try #require(try tx.object(at: position, in: query))
                    m.isRead.toggle()
                    try tx.put(m)
                }
            }
            func observing(_ read: () -> Void) -> Locked<Bool> {
                let flag = Locked(false)
                withObservationTracking(read) { flag.withLock { $0 = true } }
                return flag
            }

            let far = observing { _ = list[12] }
            try toggleRead(at: 450)
            #expect(try list.update())
            #expect(!far.current, "a change to a row not read, shifting nothing, fired")

            let same = observing { _ = list[12] }
            try toggleRead(at: 12)
            #expect(try list.update())
            #expect(same.current, "a change to the row read did not fire")
            #expect(list[12].isRead == (try store.read { try $0.object(at: 12, in: query) })?.isRead)

            // A row inserted before the one read shifts it: a different record is now at 12.
            let shifted = observing { _ = list[12] }
            let counted = observing { _ = list.count }
            let before = list[12]
            try store.write { tx in
                let first = try #require(try tx.object(at: 0, in: query))
                try tx.put(Message(id: 5_000_000, folder: first.folder, date: first.date.addingTimeInterval(1), title: "new",
                                   isRead: false, contactId: 1))
            }
            #expect(try list.update())
            #expect(shifted.current && counted.current)
            #expect(list[13] == before)
        }
    }

    /// A million rows (a hundred thousand in the quick run): random positions read through the
    /// list are the rows `object(at:)` reads, and the list keeps no more than its cache.
    @Test @MainActor func aMillionRowListAnswersRandomPositionsAsObjectAtDoes() throws {
        let rows = TestSize.choose(quick: 100_000, long: 1_000_000)
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: DemoFeed.entities, options: StoreOptions(durability: .none))
            defer { store.close() }
            var feed = DemoFeed(seed: 77)
            try feed.populate(store, messages: rows, contacts: 100, batch: 20_000)
            let query = Query(Message.self, index: "byFolderDate")
            let list = LazyLiveList(store: store, query: query, options: WatchOptions(sectionBy: 1), cacheSize: 500, pageSize: 50)
            defer { list.stop() }
            #expect(list.count == rows)
            #expect(list.sections.count == Int(DemoFeed.folders))
            var rng = SeededGenerator(seed: 78)
            try store.read { tx throws in
                for _ in 0..<2_000 {
                    let position = Int.random(in: 0..<rows, using: &rng)
                    #expect(list[position] == (try tx.object(at: position, in: query)))
                }
            }
            #expect(list.cachedCount <= 500 + 500 / 4)
            #expect(list.checkInvariants() == [])
        }
    }
}
