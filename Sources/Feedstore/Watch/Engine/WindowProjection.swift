/// The window stage: a window is a source of positions, not a second engine. The consumer sees
/// the positions `visible` of the query's full order (all of them without a window). Changed
/// rows are placed by their full positions; the only other rows a batch names are those no
/// change touched that cross the window's edges, pushed by changed rows before them or by the
/// window moving. Those keep their order among themselves, so they are found by counting, never
/// by reading the window: O(k + p) for k changed and p pushed rows.
struct WindowProjection {
    /// The positions of the full order shown before and after.
    let oldVisible: Range<Int>
    let newVisible: Range<Int>
    /// Untouched rows that leave the window: their old and new full positions.
    private(set) var pushedOut: [(old: Int, new: Int)] = []
    /// Untouched rows that enter the window: their new full positions.
    private(set) var pushedIn: [Int] = []

    init(oldVisible: Range<Int>, newVisible: Range<Int>, rows: ChangedRows) {
        self.init(oldVisible: oldVisible, newVisible: newVisible, changedOld: rows.oldPositions, changedNew: rows.newPositions)
    }

    /// - Parameters:
    ///   - changedOld: the sorted old full positions of the changed rows that were rows.
    ///   - changedNew: the sorted new full positions of the changed rows that are rows.
    init(oldVisible: Range<Int>, newVisible: Range<Int>, changedOld: [Int], changedNew: [Int]) {
        self.oldVisible = oldVisible
        self.newVisible = newVisible
        // Untouched rows, numbered in their (shared) order, that each window shows.
        let old = Self.untouched(in: oldVisible, changed: changedOld)
        let new = Self.untouched(in: newVisible, changed: changedNew)
        for run in Self.subtract(new, from: old) {
            pushedOut += zip(Self.positions(of: run, changed: changedOld), Self.positions(of: run, changed: changedNew)).map { ($0, $1) }
        }
        for run in Self.subtract(old, from: new) { pushedIn += Self.positions(of: run, changed: changedNew) }
    }

    /// The numbers of the untouched rows among `positions`.
    private static func untouched(in positions: Range<Int>, changed: [Int]) -> Range<Int> {
        let low = positions.lowerBound - MoveDetection.lowerBound(changed, positions.lowerBound)
        let high = positions.upperBound - MoveDetection.lowerBound(changed, positions.upperBound)
        return low..<max(low, high)
    }

    /// The parts of `range` outside `other`.
    private static func subtract(_ other: Range<Int>, from range: Range<Int>) -> [Range<Int>] {
        let left = range.lowerBound..<max(range.lowerBound, min(range.upperBound, other.lowerBound))
        let right = max(range.lowerBound, other.upperBound)..<max(range.upperBound, other.upperBound)
        return [left, right.clamped(to: range)].filter { !$0.isEmpty }
    }

    /// The positions of untouched rows numbered `run` in an order whose changed rows sit at the
    /// sorted positions `changed`.
    private static func positions(of run: Range<Int>, changed: [Int]) -> [Int] {
        var result: [Int] = []
        result.reserveCapacity(run.count)
        var position = run.lowerBound
        var next = 0
        for number in run {
            if number > run.lowerBound { position += 1 }
            while next < changed.count, changed[next] <= position {
                position += 1
                next += 1
            }
            result.append(position)
        }
        return result
    }
}
