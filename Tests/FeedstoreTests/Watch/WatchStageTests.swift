@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The pure stages of the watch engine, each against a model of a batch built by hand: which
/// rows move, which untouched rows a window's edges push, how a batch moves cached positions,
/// and how sections map flat positions. The end-to-end contract tests check the same stages
/// through a store; these name the stage that breaks.
@Suite(.blocking) struct WatchStageTests {
    /// One batch as a list sees it: the old and the new order of row ids, and what happened.
    struct Scenario {
        var old: [Int]
        var new: [Int]
        var deleted: Set<Int>
        var inserted: Set<Int>
        /// Survivors whose key changed: they may go anywhere.
        var keyChanged: Set<Int>
        /// Survivors changed in place (same key): touched, but keeping their order.
        var updated: Set<Int>

        var survivors: [Int] { old.filter { !deleted.contains($0) } }
        var changed: Set<Int> { deleted.union(inserted).union(keyChanged).union(updated) }
        func oldPosition(_ id: Int) -> Int { old.firstIndex(of: id)! }
        func newPosition(_ id: Int) -> Int { new.firstIndex(of: id)! }

        /// Unchanged-key survivors keep their relative order; the rest go anywhere.
        static func random(rows: Int, _ rng: inout SeededGenerator) -> Scenario {
            let old = Array(0..<rows)
            var deleted = Set<Int>(), keyChanged = Set<Int>(), updated = Set<Int>()
            for id in old {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0, 1: deleted.insert(id)
                case 2, 3: keyChanged.insert(id)
                case 4: updated.insert(id)
                default: break
                }
            }
            let inserted = Set((0..<Int.random(in: 0...max(1, rows / 4), using: &rng)).map { rows + $0 })
            var new = old.filter { !deleted.contains($0) && !keyChanged.contains($0) }
            for id in keyChanged.sorted() + inserted.sorted() { new.insert(id, at: Int.random(in: 0...new.count, using: &rng)) }
            return Scenario(old: old, new: new, deleted: deleted, inserted: inserted, keyChanged: keyChanged, updated: updated)
        }
    }

    /// Whether the rows `staying` keep their relative order from `old` to `new`.
    static func keepOrder(_ staying: Set<Int>, _ s: Scenario) -> Bool {
        s.old.filter(staying.contains) == s.new.filter(staying.contains)
    }

    // MARK: Moves

    /// The moved rows are the fewest whose removal leaves every other survivor in order, and
    /// include every row that changed section.
    @Test(arguments: testSeeds(8, base: 301))
    func movesAreTheFewestThatKeepTheRestInOrder(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        for round in 0..<300 {
            let s = Scenario.random(rows: Int.random(in: 0...9, using: &rng), &rng)
            let candidates = s.keyChanged.sorted()
            let changedSection = Set(candidates.filter { _ in Int.random(in: 0..<5, using: &rng) == 0 })
            let moved = MoveDetection.moves(
                changedKeys: candidates.map { .init(old: s.oldPosition($0), new: s.newPosition($0), changedSection: changedSection.contains($0)) },
                deletedOld: s.deleted.map(s.oldPosition).sorted(), insertedNew: s.inserted.map(s.newPosition).sorted()
            ).map { candidates[$0] }
            let staying = Set(s.survivors).subtracting(moved)
            #expect(changedSection.isSubset(of: moved), "seed \(seed), round \(round)")
            #expect(Self.keepOrder(staying, s), "\(s), moved \(moved), seed \(seed), round \(round)")
            // No smaller set of moves would do.
            let free = candidates.filter { !changedSection.contains($0) }
            let fewest = (0..<(1 << free.count)).lazy.filter { mask in
                let moving = Set(free.indices.filter { mask >> $0 & 1 == 1 }.map { free[$0] }).union(changedSection)
                return Self.keepOrder(Set(s.survivors).subtracting(moving), s)
            }.map { $0.nonzeroBitCount + changedSection.count }.min()
            #expect(moved.count == fewest, "\(moved.count) moves where \(String(describing: fewest)) do, seed \(seed), round \(round)")
        }
    }

    // MARK: Windows

    /// The rows a window's edges push in and out are exactly the untouched rows that one window
    /// shows and the other does not, with their positions.
    @Test(arguments: testSeeds(8, base: 311))
    func windowsPushExactlyTheUntouchedRowsAcrossTheirEdges(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        for round in 0..<300 {
            let s = Scenario.random(rows: Int.random(in: 0...40, using: &rng), &rng)
            func window(_ count: Int) -> Range<Int> {
                let window = WatchWindow(offset: Int.random(in: 0...count + 2, using: &rng), limit: Int.random(in: 0...count + 2, using: &rng))
                return ListLayout.visible(Bool.random(using: &rng) ? window : nil, count: count)
            }
            let oldVisible = window(s.old.count), newVisible = window(s.new.count)
            let changed = s.changed
            let projection = WindowProjection(oldVisible: oldVisible, newVisible: newVisible,
                                              changedOld: s.old.filter(changed.contains).map(s.oldPosition).sorted(),
                                              changedNew: s.new.filter(changed.contains).map(s.newPosition).sorted())
            let untouched = s.survivors.filter { !changed.contains($0) }
            let out = untouched.filter { oldVisible.contains(s.oldPosition($0)) && !newVisible.contains(s.newPosition($0)) }
            let into = untouched.filter { newVisible.contains(s.newPosition($0)) && !oldVisible.contains(s.oldPosition($0)) }
            #expect(projection.pushedOut.map(\.old) == out.map(s.oldPosition) && projection.pushedOut.map(\.new) == out.map(s.newPosition),
                    "seed \(seed), round \(round)")
            #expect(projection.pushedIn == into.map(s.newPosition), "seed \(seed), round \(round)")
        }
    }

    // MARK: Cached positions

    /// A cached row's position after a batch is where the row is in the new order; rows that
    /// leave or are updated are dropped.
    @Test(arguments: testSeeds(8, base: 321))
    func aRemapMovesEachCachedRowToItsNewPosition(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        for round in 0..<300 {
            let s = Scenario.random(rows: Int.random(in: 0...40, using: &rng), &rng)
            // UIKit's way: moves are a removal and an insertion.
            let leaving = s.deleted.union(s.keyChanged), arriving = s.inserted.union(s.keyChanged)
            let remap = PositionRemap(removed: PositionRemap.merged(leaving.map { s.oldPosition($0) ..< s.oldPosition($0) + 1 }),
                                      inserted: PositionRemap.merged(arriving.map { s.newPosition($0) ..< s.newPosition($0) + 1 }),
                                      updated: Set(s.updated.map(s.oldPosition)))
            var slots = Dictionary(uniqueKeysWithValues: s.old.filter { _ in Bool.random(using: &rng) }.map { (s.oldPosition($0), $0) })
            let cached = Set(slots.values)
            let dropped = remap.apply(to: &slots)
            #expect(Set(dropped) == cached.intersection(leaving.union(s.updated)), "seed \(seed), round \(round)")
            #expect(slots.allSatisfy { s.newPosition($0.value) == $0.key }, "seed \(seed), round \(round)")
            #expect(Set(slots.values) == cached.subtracting(leaving).subtracting(s.updated), "seed \(seed), round \(round)")

            let capacity = Int.random(in: 0...slots.count + 1, using: &rng), center = Int.random(in: 0...s.new.count, using: &rng)
            let before = slots
            let evicted = PositionRemap.farthest(in: &slots, from: center, keeping: capacity)
            #expect(slots.count == min(capacity, before.count) && Set(evicted).union(slots.values) == Set(before.values))
            let keptDistance = slots.keys.map { abs($0 - center) }.max() ?? 0
            #expect(before.filter { evicted.contains($0.value) }.allSatisfy { abs($0.key - center) >= keptDistance }, "seed \(seed)")
        }
    }

    // MARK: Sections

    /// Sections stay in key order without empty ones, and map flat positions, windows and
    /// differences exactly as counting the rows one by one does.
    @Test(arguments: testSeeds(8, base: 331))
    func sectionsMapPositionsAsTheirRowsDo(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        for round in 0..<100 {
            let descending = Bool.random(using: &rng)
            var model: [UInt8: Int] = [:]
            var list = SectionList([], descending: descending)
            for _ in 0..<Int.random(in: 1...30, using: &rng) {
                let before = list
                let prefix = UInt8.random(in: 0...12, using: &rng), count = Int.random(in: 0...4, using: &rng)
                try list.setCount(count, of: [prefix], key: [.int(Int64(prefix))])
                model[prefix] = count == 0 ? nil : count

                let order = model.keys.sorted(by: descending ? (>) : (<))
                #expect(list.sections.map(\.prefix) == order.map { [$0] } && list.sections.map(\.count) == order.map { model[$0]! },
                        "seed \(seed), round \(round)")
                #expect(list.sections.map(\.key) == order.map { [.int(Int64($0))] })
                // Every flat position, by counting.
                let flat = order.enumerated().flatMap { section, prefix in (0..<model[prefix]!).map { RowPath(section: section, row: $0) } }
                #expect(list.rowCount == flat.count && flat.indices.allSatisfy { list.path(ofFlat: $0) == flat[$0] }, "seed \(seed)")
                #expect(order.indices.allSatisfy { section in list.start(of: section) == flat.firstIndex { $0.section == section } })
                // A window of the rows.
                let low = Int.random(in: 0...flat.count, using: &rng), high = Int.random(in: low...flat.count, using: &rng)
                let shown = list.clipped(to: low..<high)
                let expected = order.indices.compactMap { section -> (UInt8, Int)? in
                    let rows = flat[low..<high].filter { $0.section == section }.count
                    return rows > 0 ? (order[section], rows) : nil
                }
                #expect(shown.sections.map(\.prefix) == expected.map { [$0.0] } && shown.sections.map(\.count) == expected.map(\.1),
                        "window \(low)..<\(high), seed \(seed), round \(round)")
                // The sections a change deletes and inserts.
                let (deletes, inserts) = SectionList.difference(from: before, to: list)
                #expect(deletes == before.sections.indices.filter { list.index(of: before.sections[$0].prefix) == nil })
                #expect(inserts.map(\.index) == list.sections.indices.filter { before.index(of: list.sections[$0].prefix) == nil })
            }
        }
    }
}

/// The one value that converts a watcher's positions: list positions, shown positions and paths
/// agree with counting the rows of a list one by one, with and without a window.
@Suite struct ListLayoutTests {
    @Test(arguments: testSeeds(8, base: 577))
    func positionsAndPathsAgreeWithCountingTheRows(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        for round in 0..<200 {
            let counts = (0..<Int.random(in: 0...6, using: &rng)).map { _ in Int.random(in: 1...9, using: &rng) }
            let sections = counts.isEmpty && Bool.random(using: &rng)
                ? SectionList.single(count: 0, descending: false)
                : SectionList(counts.enumerated().map { .init(prefix: [UInt8($0.offset)], key: [.int(Int64($0.offset))], count: $0.element) },
                              descending: false)
            let total = counts.reduce(0, +)
            let window = Bool.random(using: &rng)
                ? WatchWindow(offset: Int.random(in: 0...total + 3, using: &rng), limit: Int.random(in: 0...total + 3, using: &rng)) : nil
            let layout = ListLayout(sections: sections, window: window)
            let context = "seed \(seed), round \(round), counts \(counts), window \(String(describing: window))"
            #expect(layout.checkInvariants(sample: .max).isEmpty, "\(context): \(layout.checkInvariants(sample: .max))")
            // The rows by counting: every list position's section and row, then the window's cut.
            let rows = counts.enumerated().flatMap { section, count in (0..<count).map { (section, $0) } }
            let start = min(window?.offset ?? 0, total), end = window.map { min(total, start + $0.limit) } ?? total
            #expect(layout.visible == start..<end, "\(context)")
            let firstShownSection = rows.indices.contains(start) ? rows[start].0 : 0
            for position in 0..<total {
                let expected = (start..<end).contains(position)
                    ? RowPath(section: rows[position].0 - firstShownSection,
                              row: rows[position].1 - (rows[position].0 == firstShownSection ? rows[start].1 : 0))
                    : nil
                #expect(layout.path(ofList: position) == expected, "\(context), list position \(position)")
            }
            // Runs of any range of shown positions cover it, section by section, cut to the rows shown.
            let low = Int.random(in: -2...layout.shownCount + 2, using: &rng), high = Int.random(in: low...layout.shownCount + 4, using: &rng)
            let runs = layout.runs(ofShown: low..<high)
            let covered = runs.flatMap { run in (0..<run.count).map { RowPath(section: run.start.section, row: run.start.row + $0) } }
            let wanted = (max(0, low)..<max(max(0, low), min(high, layout.shownCount))).map { layout.path(ofShown: $0) }
            #expect(covered == wanted, "\(context), runs of \(low)..<\(high)")
            #expect(zip(runs, runs.dropFirst()).allSatisfy { $0.start.section < $1.start.section }, "\(context): one run per section")
        }
    }
}
