/// How a batch moves the shown positions of a list's rows, UIKit's way: rows leave at the
/// removed old positions (deletes and move sources), then rows arrive at the inserted new
/// positions (inserts and move destinations). A row that stays moves back by the rows removed
/// before it and forward past the rows inserted before it. Not generic, so a lazy list moves
/// its cached rows' positions at the cost of integer work whatever its row type.
struct PositionRemap {
    /// Old positions of rows that leave, sorted and disjoint.
    let removed: [Range<Int>]
    /// New positions of rows that arrive, sorted and disjoint.
    let inserted: [Range<Int>]
    /// Old positions of rows whose content changed (they stay, but are read again).
    let updated: Set<Int>

    /// Moves every entry of `slots` (a value kept by old position) to its new position, in one
    /// pass in position order; returns the values of rows removed or updated, which are dropped.
    /// - Complexity: O(c log c + k) for c entries and k ranges.
    func apply(to slots: inout [Int: Int]) -> [Int] {
        var moved: [Int: Int] = [:]
        moved.reserveCapacity(slots.count)
        var dropped: [Int] = []
        var removal = 0, removedBefore = 0
        var insertion = 0, insertedBefore = 0
        for (old, slot) in slots.sorted(by: { $0.key < $1.key }) {
            while removal < removed.count, removed[removal].upperBound <= old {
                removedBefore += removed[removal].count
                removal += 1
            }
            if removal < removed.count && removed[removal].contains(old) || updated.contains(old) {
                dropped.append(slot)
                continue
            }
            // Positions stay in order, so the inserted ranges passed so far stay passed.
            var new = old - removedBefore + insertedBefore
            while insertion < inserted.count, inserted[insertion].lowerBound <= new {
                insertedBefore += inserted[insertion].count
                new += inserted[insertion].count
                insertion += 1
            }
            moved[new] = slot
        }
        slots = moved
        return dropped
    }

    /// Sorted, overlapping or touching ranges joined.
    static func merged(_ ranges: [Range<Int>]) -> [Range<Int>] {
        var result: [Range<Int>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
            if let last = result.last, range.lowerBound <= last.upperBound {
                result[result.count - 1] = last.lowerBound ..< Swift.max(last.upperBound, range.upperBound)
            } else {
                result.append(range)
            }
        }
        return result
    }

    /// Removes from `slots` all but the `capacity` entries nearest to position `center`;
    /// returns the values removed.
    static func farthest(in slots: inout [Int: Int], from center: Int, keeping capacity: Int) -> [Int] {
        guard slots.count > capacity else { return [] }
        let byDistance = slots.sorted { abs($0.key - center) < abs($1.key - center) }
        for (position, _) in byDistance[capacity...] { slots[position] = nil }
        return byDistance[capacity...].map(\.value)
    }
}
