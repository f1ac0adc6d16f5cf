/// The one binary search of the library: where a partitioned range turns.
extension Range where Bound == Int {
    /// The first index of the range for which `isAfter` holds, or the range's end when it holds
    /// for none; `isAfter` must hold for a suffix of the range (false, …, false, true, …, true).
    /// A lower bound in a sorted array is `(0..<a.count).partitionPoint { a[$0] >= value }`.
    /// - Complexity: O(log n) calls of `isAfter`.
    @inline(__always)
    func partitionPoint(where isAfter: (Int) throws -> Bool) rethrows -> Int {
        var low = lowerBound, high = upperBound
        while low < high {
            let middle = low &+ (high &- low) >> 1
            if try isAfter(middle) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
