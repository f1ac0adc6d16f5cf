import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Batches as UIKit's batch updates take them: applying a batch's `TableUpdates` by UIKit's rules
/// (deletes, move sources and reloads at old index paths; then sections; then inserts and move
/// destinations at new ones, ascending) to the ids a view shows gives the ids of a fresh query,
/// for typed and indexes-only watchers alike.
@Suite(.blocking) struct TableUpdatesTests {
    /// The ids of the demo feed's byFolderDate order, a section per folder.
    static func sections(in store: Store) throws -> [[UInt64]] {
        let rows = try store.read { try $0.objects(in: Query(Message.self, index: "byFolderDate")) }
        var sections: [[UInt64]] = []
        var folder: Int64?
        for row in rows {
            if row.folder != folder { sections.append([]) }
            folder = row.folder
            sections[sections.count - 1].append(row.id)
        }
        return sections
    }

    /// UIKit's rules, applied to the ids shown; the ids of inserted rows come from `fresh`.
    static func apply(_ updates: TableUpdates, to shown: [[UInt64]], fresh: [[UInt64]]) throws -> [[UInt64]] {
        var sections = shown
        let movedIDs = try updates.movedRows.map { move -> (IndexPath, UInt64) in
            (move.to, try #require(shown[safe: move.from[0]]?[safe: move.from[1]]))
        }
        let reloaded = Set(updates.reloadedRows)
        #expect(reloaded.isDisjoint(with: updates.movedRows.map(\.from)), "a row both moved and reloaded")
        #expect(reloaded.isDisjoint(with: updates.deletedRows), "a row both deleted and reloaded")
        for path in (updates.deletedRows + updates.movedRows.map(\.from)).sorted(by: >) { sections[path[0]].remove(at: path[1]) }
        for index in updates.deletedSections.reversed() {
            #expect(sections[index].isEmpty, "deleted section \(index) still has rows")
            sections.remove(at: index)
        }
        for index in updates.insertedSections { sections.insert([], at: index) }
        let arriving = updates.insertedRows.map { ($0, fresh[$0[0]][$0[1]]) } + movedIDs
        for (path, id) in arriving.sorted(by: { $0.0 < $1.0 }) { sections[path[0]].insert(id, at: path[1]) }
        return sections
    }

    @Test(arguments: [false, true]) func updatesTakeTheViewToTheQuery(indexesOnly: Bool) throws {
        for seed in testSeeds(3) {
            try withTemporaryDirectory { dir in
                var feed = DemoFeed(seed: seed)
                let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: 600, contacts: 20)
                defer { store.close() }
                let query = Query(Message.self, index: "byFolderDate")
                let options = WatchOptions(sectionBy: 1)
                let typed = indexesOnly ? nil : store.watch(query, options: options)
                let positions = indexesOnly ? store.watchIndexes(query, options: options) : nil
                func next() throws -> TableUpdates? { try typed?.poll()?.tableUpdates ?? positions?.poll()?.tableUpdates }
                let initial = try #require(try next())
                #expect(initial.reloadsEverything)
                var shown = try Self.sections(in: store)
                for step in 0..<30 {
                    try store.write { tx in try feed.mutate(tx, count: 1 + step % 6, contacts: 20) }
                    let fresh = try Self.sections(in: store)
                    if let updates = try next() {
                        #expect(!updates.reloadsEverything)
                        shown = try Self.apply(updates, to: shown, fresh: fresh)
                    }
                    #expect(shown == fresh, "seed \(seed), step \(step)")
                }
            }
        }
    }

    /// Typed batches applied to a diffable snapshot by identifiers give the query's sections and
    /// rows; updated rows are reconfigured.
    @Test func diffableSnapshotsFollowTheQuery() throws {
        for seed in testSeeds(3) {
            try withTemporaryDirectory { dir in
                var feed = DemoFeed(seed: seed)
                let store = try populatedDemoStore(at: dir + "/s", feed: &feed, messages: 500, contacts: 20)
                defer { store.close() }
                let watcher = store.watch(Query(Message.self, index: "byFolderDate"), options: WatchOptions(sectionBy: 1))
                var snapshot = ArraySnapshot()
                snapshot.apply(try #require(try watcher.poll()))
                #expect(snapshot.items == (try Self.sections(in: store)))
                for step in 0..<30 {
                    try store.write { tx in try feed.mutate(tx, count: 1 + step % 5, contacts: 20) }
                    if let batch = try watcher.poll() {
                        snapshot.reconfigured = []
                        snapshot.apply(batch)
                        #expect(Set(snapshot.reconfigured) == Set(batch.updates.map(\.id) + batch.moves.filter { !$0.fields.isEmpty }.map(\.id)))
                    }
                    let fresh = try Self.sections(in: store)
                    #expect(snapshot.items == fresh, "seed \(seed), step \(step)")
                    #expect(snapshot.sections.count == fresh.count)
                }
            }
        }
    }

    @Test func rowPathsAndIndexPathsConvert() {
        let path = RowPath(section: 3, row: 41)
        #expect(path.indexPath == IndexPath(indexes: [3, 41]))
        #expect(RowPath(path.indexPath) == path)
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

/// A diffable snapshot over arrays, with NSDiffableDataSourceSnapshot's rules: identifiers are
/// unique, inserts go before an existing item or at a section's end.
struct ArraySnapshot: DiffableSnapshotEditing {
    var sections: [[FieldValue]] = []
    var items: [[UInt64]] = []
    var reconfigured: [UInt64] = []

    var sectionIdentifiers: [[FieldValue]] { sections }
    func itemIdentifiers(inSection identifier: [FieldValue]) -> [UInt64] { items[sections.firstIndex(of: identifier)!] }
    mutating func appendSections(_ identifiers: [[FieldValue]]) {
        for id in identifiers {
            precondition(!sections.contains(id), "section \(id) twice")
            sections.append(id)
            items.append([])
        }
    }
    mutating func insertSections(_ identifiers: [[FieldValue]], beforeSection toIdentifier: [FieldValue]) {
        let at = sections.firstIndex(of: toIdentifier)!
        sections.insert(contentsOf: identifiers, at: at)
        items.insert(contentsOf: identifiers.map { _ in [] }, at: at)
    }
    mutating func deleteSections(_ identifiers: [[FieldValue]]) {
        for id in identifiers {
            let at = sections.firstIndex(of: id)!
            sections.remove(at: at)
            items.remove(at: at)
        }
    }
    mutating func appendItems(_ identifiers: [UInt64], toSection sectionIdentifier: [FieldValue]?) {
        let at = sectionIdentifier.map { sections.firstIndex(of: $0)! } ?? sections.count - 1
        precondition(identifiers.allSatisfy { id in !items.contains { $0.contains(id) } }, "an item twice")
        items[at] += identifiers
    }
    mutating func insertItems(_ identifiers: [UInt64], beforeItem beforeIdentifier: UInt64) {
        let section = items.firstIndex { $0.contains(beforeIdentifier) }!
        items[section].insert(contentsOf: identifiers, at: items[section].firstIndex(of: beforeIdentifier)!)
    }
    mutating func deleteItems(_ identifiers: [UInt64]) {
        let gone = Set(identifiers)
        for i in items.indices { items[i].removeAll { gone.contains($0) } }
    }
    mutating func reconfigureItems(_ identifiers: [UInt64]) {
        precondition(identifiers.allSatisfy { id in items.contains { $0.contains(id) } }, "reconfiguring an item not shown")
        reconfigured += identifiers
    }
}
