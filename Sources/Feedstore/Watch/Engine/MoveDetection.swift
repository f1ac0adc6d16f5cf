/// Which surviving rows must be reported as moves. A row whose key did not change keeps its
/// order among the other such rows, so only rows whose key changed can move. A row whose key
/// changed moves when it changed section (its old section may be deleted), or when the number
/// of unchanged rows before it differs between the old and new snapshots. Among the rest, all
/// but a longest run already in new order move, so the fewest rows move and every row that does
/// not move keeps its relative order.
enum MoveDetection {
    struct Candidate {
        var old: Int
        var new: Int
        /// The row changed section, so it moves whatever its order.
        var changedSection = false
    }

    /// Returns the indexes into `changedKeys` of the rows that move.
    /// - Parameters:
    ///   - changedKeys: old and new shown positions of surviving rows whose key changed.
    ///   - deletedOld: sorted old positions of rows that left.
    ///   - insertedNew: sorted new positions of rows that joined.
    static func moves(changedKeys: [Candidate], deletedOld: [Int], insertedNew: [Int]) -> Set<Int> {
        let oldSorted = changedKeys.map(\.old).sorted()
        let newSorted = changedKeys.map(\.new).sorted()
        var moved = Set<Int>()
        var stay: [Int] = []
        for (i, c) in changedKeys.enumerated() {
            // Unchanged survivors before the row, in the old and the new snapshot.
            let before0 = c.old - lowerBound(deletedOld, c.old) - lowerBound(oldSorted, c.old)
            let before1 = c.new - lowerBound(insertedNew, c.new) - lowerBound(newSorted, c.new)
            if c.changedSection || before0 != before1 { moved.insert(i) } else { stay.append(i) }
        }
        stay.sort { changedKeys[$0].old < changedKeys[$1].old }
        let keep = Set(longestIncreasingRun(stay.map { changedKeys[$0].new }).map { stay[$0] })
        for i in stay where !keep.contains(i) { moved.insert(i) }
        return moved
    }

    /// How many values of a sorted array are below `value`.
    static func lowerBound(_ sorted: [Int], _ value: Int) -> Int {
        sorted.indices.partitionPoint { sorted[$0] >= value }
    }

    /// Indexes of a longest strictly increasing subsequence. - Complexity: O(m log m).
    static func longestIncreasingRun(_ values: [Int]) -> [Int] {
        var tails: [Int] = []  // index into values of the smallest tail of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (i, v) in values.enumerated() {
            let low = tails.indices.partitionPoint { values[tails[$0]] >= v }
            if low > 0 { previous[i] = tails[low - 1] }
            if low == tails.count { tails.append(i) } else { tails[low] = i }
        }
        var run: [Int] = []
        var i = tails.last ?? -1
        while i >= 0 {
            run.append(i)
            i = previous[i]
        }
        return run.reversed()
    }
}
