@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The store's change feed: routing by key range finds exactly the watchers a change concerns,
/// and a watcher no change touches does no work and is not woken.
@Suite(.blocking) struct ChangeFeedTests {
    /// Random ranges added and removed; after every step the tree's invariants hold and every
    /// key finds exactly the ranges a scan of all of them finds.
    @Test(arguments: testSeeds(4))
    func rangeTreeFindsWhatAScanFinds(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let tree = RangeTree<UInt64>()
        var ranges: [UInt64: KeyRange] = [:]
        func key() -> [UInt8] { (0..<Int.random(in: 0...3, using: &random)).map { _ in UInt8.random(in: 0...4, using: &random) } }
        for step in 0..<600 {
            if ranges.isEmpty || Int.random(in: 0..<3, using: &random) > 0 {
                var range = KeyRange(lower: Bool.random(using: &random) ? key() : nil, upper: Bool.random(using: &random) ? key() : nil)
                if let l = range.lower, let u = range.upper, !l.sortsBefore(u) { range.isEmpty = true }
                let serial = UInt64(step)
                tree.insert(range, serial: serial, value: serial)
                ranges[serial] = range
            } else {
                let serial = ranges.keys.randomElement(using: &random)!
                tree.remove(ranges[serial]!, serial: serial)
                ranges[serial] = nil
            }
            let problems = tree.invariantViolations()
            #expect(problems.isEmpty, "seed \(seed) step \(step): \(problems)")
            #expect(tree.count == ranges.values.filter { !$0.isEmpty }.count, "seed \(seed) step \(step)")
            for _ in 0..<4 {
                let probe = key()
                var found: [UInt64] = []
                tree.forEach(containing: probe) { found.append($0) }
                let expected = ranges.filter { $0.value.isEmpty == false && probe.withUnsafeBytes($0.value.contains) }.keys
                #expect(found.sorted() == expected.sorted(), "seed \(seed) step \(step) key \(probe)")
            }
        }
    }

    /// A thousand watchers, one per contact; a change to one message reaches the watchers of its
    /// contact before and after, and no other folds an entry or wakes.
    @Test func untouchedWatchersDoNoWork() throws {
        try withTemporaryDirectory { dir in
            let store = try populatedDemoStore(at: dir + "/s", seed: 21, messages: 3_000, contacts: 1_000)
            let watchers = (1...1_000).map { store.watch(Query(Message.self, index: "byContact", range: .prefix(.uint(UInt64($0))))) }
            for watcher in watchers { #expect(try watcher.poll()?.isInitial == true) }
            let message = try #require(try store.read { try $0.query(Message.self, index: "byContact", range: .prefix(.uint(500))).first })
            var moved = message
            moved.contactId = 501
            try store.write { tx in try tx.put(moved) }

            func folds(_ contact: Int) -> Int { watchers[contact - 1].waitSubscription!.folds }
            #expect(folds(500) == 1 && folds(501) == 1)
            #expect((1...1_000).filter { folds($0) > 0 } == [500, 501])
            // The touched watchers deliver; an untouched one waits out its timeout.
            #expect(try watchers[499].next(timeout: 5)?.deletes.map(\.id) == [message.id])
            #expect(try watchers[500].next(timeout: 5)?.inserts.map(\.id) == [message.id])
            #expect(try watchers[0].next(timeout: 0.05) == nil)
            #expect(watchers[0].waitSubscription!.wakes == 0)
            #expect(watchers[0].waitSubscription!.folds == 0)
            for watcher in watchers { watcher.cancel() }
        }
    }

    /// Two thousand watchers of every kind on overlapping ranges (typed and indexes-only, with
    /// and without sections and windows), random commits, each watcher's mirror compared with a
    /// fresh query.
    @Test(arguments: testSeeds(1, base: 40))
    func thousandsOfWatchersOnOverlappingRangesStayExact(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            var feed = DemoFeed(seed: seed)
            let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: 120, contacts: 6)
            var random = SeededGenerator(seed: seed)
            let configurations = (0..<2_000).map { _ in Self.randomConfiguration(&random) }
            var typed: [(Watcher<Message>, SectionedMirror<Message>, WatcherContractTests.Configuration)] = []
            var indexed: [(IndexWatcher<Message>, SectionedMirror<Message>, WatcherContractTests.Configuration)] = []
            for (i, c) in configurations.enumerated() {
                if i % 2 == 0 {
                    typed.append((store.watch(c.query, options: c.options), SectionedMirror(), c))
                } else {
                    indexed.append((store.watchIndexes(c.query, options: c.options), SectionedMirror(), c))
                }
            }
            for commit in 0..<12 {
                for i in typed.indices {
                    if let batch = try typed[i].0.poll() { try typed[i].1.apply(batch) }
                }
                for i in indexed.indices {
                    if let batch = try indexed[i].0.poll() { try IndexWatcherTests.apply(batch, to: &indexed[i].1, reading: indexed[i].0) }
                }
                if commit % 4 == 0 {
                    for (_, mirror, c) in typed { try WatcherContractTests.check(mirror, store, c, "seed \(seed) commit \(commit) \(c.name)") }
                    for (_, mirror, c) in indexed { try WatcherContractTests.check(mirror, store, c, "seed \(seed) commit \(commit) \(c.name), indexes only") }
                }
                try store.write { tx in try feed.mutate(tx, count: Int.random(in: 1...4, using: &feed.generator), contacts: 6) }
            }
        }
    }

    static func randomConfiguration(_ random: inout SeededGenerator) -> WatcherContractTests.Configuration {
        let index = ["byFolderDate", "unreadByDate", "byContact"].randomElement(using: &random)!
        var range = IndexRange.all
        switch (index, Int.random(in: 0..<3, using: &random)) {
        case ("byFolderDate", 1): range = .prefix(.int(Int64.random(in: 0..<DemoFeed.folders, using: &random)))
        case ("byFolderDate", 2):
            let low = Int64.random(in: 0..<DemoFeed.folders, using: &random)
            range = IndexRange(from: .inclusive([.int(low)]), to: .exclusive([.int(low + Int64.random(in: 1...3, using: &random))]))
        case ("byContact", 1), ("byContact", 2): range = .prefix(.uint(UInt64.random(in: 1...6, using: &random)))
        default: break
        }
        let sectionBy = index == "unreadByDate" ? 0 : Int.random(in: 0...1, using: &random)
        let window = Bool.random(using: &random)
            ? WatchWindow(offset: Int.random(in: 0..<40, using: &random), limit: Int.random(in: 1..<30, using: &random)) : nil
        let reverse = Int.random(in: 0..<4, using: &random) == 0
        let name = "\(index) \(range) reverse \(reverse) sectionBy \(sectionBy) window \(String(describing: window))"
        return .init(name: name, query: Query(index: index, range: range, reverse: reverse), options: WatchOptions(sectionBy: sectionBy, window: window))
    }

    /// Windows moved at random between commits (paging), typed and indexes-only: each move is a
    /// batch, and the mirrors match a fresh query of the new window.
    @Test(arguments: testSeeds(3, base: 70))
    func randomWindowMovesKeepMirrorsExact(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            var feed = DemoFeed(seed: seed)
            let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: 300, contacts: 8)
            var random = SeededGenerator(seed: seed)
            for sectionBy in [0, 1] {
                var c = WatcherContractTests.Configuration(name: "paging sectionBy \(sectionBy)", query: Query(index: "byFolderDate"),
                                                           options: WatchOptions(sectionBy: sectionBy, window: WatchWindow(offset: 10, limit: 25)))
                let watcher = store.watch(c.query, options: c.options)
                let indexWatcher = store.watchIndexes(c.query, options: c.options)
                var mirror = SectionedMirror<Message>(), indexMirror = SectionedMirror<Message>()
                for step in 0..<60 {
                    if Bool.random(using: &random) {
                        let window = WatchWindow(offset: Int.random(in: 0..<320, using: &random), limit: Int.random(in: 0..<60, using: &random))
                        watcher.setWindow(offset: window.offset, limit: window.limit)
                        indexWatcher.setWindow(offset: window.offset, limit: window.limit)
                        c.options.window = window
                    } else {
                        try store.write { tx in try feed.mutate(tx, count: Int.random(in: 1...5, using: &feed.generator), contacts: 8) }
                    }
                    if let batch = try watcher.poll() { try mirror.apply(batch) }
                    if let batch = try indexWatcher.poll() { try IndexWatcherTests.apply(batch, to: &indexMirror, reading: indexWatcher) }
                    let context = "seed \(seed) \(c.name) step \(step) window \(c.options.window!)"
                    try WatcherContractTests.check(mirror, store, c, context)
                    try WatcherContractTests.check(indexMirror, store, c, "\(context), indexes only")
                }
            }
        }
    }
}
