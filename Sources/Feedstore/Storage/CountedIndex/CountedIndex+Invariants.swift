extension CountedIndex {
    /// Compares the tree with a full scan of the entries: every node is reachable from the root
    /// and nothing else is stored; each node's fence is its first child's, its children's fences
    /// ascend, and every count equals what lies below; buckets and nodes are within bounds; and
    /// (optionally) `rank` and `entry(at:)` agree with the entries' order at every position.
    /// Returns what is wrong.
    /// - Complexity: O(n log n) with every position, O(n) without.
    /// - Parameter periodically: called after every 1,024 entries walked (a verifier releases
    ///   the pages read there).
    func check(in txn: borrowing LMDBTransaction, checkEveryPosition: Bool = true, periodically: (() -> Void)? = nil) throws -> [String] {
        let walkedBetweenCalls = 1_024
        var problems: [String] = []
        let height: Int
        do { height = try self.height(in: txn) } catch { return ["\(error)"] }
        var buckets: [(fence: [UInt8], count: Int)] = []
        var nodes = 0

        /// Visits a node and returns the entries below it.
        func visit(_ level: Int, _ fence: [UInt8], in txn: borrowing LMDBTransaction) throws -> Int {
            nodes += 1
            let node: CountNode
            do { node = try withNode(level, fence, in: txn) { try CountNode($0) } } catch {
                problems.append("\(error)")
                return 0
            }
            if node.fences.first != fence { problems.append("level \(level) node's fence is not its first child's") }
            for (a, b) in zip(node.fences, node.fences.dropFirst()) where !a.sortsBefore(b) {
                problems.append("level \(level) node's children are out of order")
            }
            if node.counts.count > limits.maximumChildren || !fits(node, fence: fence) {
                problems.append("level \(level) node holds \(node.counts.count) children in \(node.byteCount) bytes")
            }
            for (childFence, count) in zip(node.fences, node.counts) {
                if level == 1 {
                    buckets.append((childFence, count))
                } else {
                    let below = try visit(level - 1, childFence, in: txn)
                    if below != count { problems.append("level \(level) child counts \(count), holds \(below)") }
                }
            }
            return node.total
        }

        let total = try visit(height, [], in: txn)
        if height > 1, try withNode(height, [], in: txn, { $0.count }) < 2 { problems.append("the root has a single child") }
        let stored = try txn.statistics(counts).entries
        if stored != nodes + 1 { problems.append("\(stored - 1) nodes stored, \(nodes) reachable from the root") }

        // The entries against the buckets, walked together (nothing gathered): each bucket
        // holds the entries from its fence up to the next bucket's.
        var entryCount = 0
        var complete = true
        try txn.withCursor(entries) { cursor in
            var found = try cursor.first()
            for (i, bucket) in buckets.enumerated() {
                let end = i + 1 < buckets.count ? buckets[i + 1].fence : nil
                if found, Array(cursor.key).sortsBefore(bucket.fence) { problems.append("entry before bucket \(i)'s fence") }
                var n = 0
                while found, end.map({ Array(cursor.key).sortsBefore($0) }) ?? true {
                    n += 1
                    entryCount += 1
                    if entryCount % walkedBetweenCalls == 0 { periodically?() }
                    found = try cursor.next()
                }
                if n != bucket.count { problems.append("bucket \(i) counts \(bucket.count), holds \(n)") }
                if n > limits.maximumBucket { problems.append("bucket \(i) holds \(n) entries") }
                if problems.count > 20 {
                    complete = false
                    return
                }
            }
            while found {
                entryCount += 1
                found = try cursor.next()
            }
        }
        guard complete else { return problems }
        if total != entryCount { problems.append("the root counts \(total) entries; the index holds \(entryCount)") }
        if checkEveryPosition && problems.isEmpty {
            var position = 0
            try txn.withCursor(entries) { cursor in
                var found = try cursor.first()
                while found {
                    let key = Array(cursor.key)
                    let r = try rank(of: key, in: txn)
                    let e = try entry(at: position, in: txn)
                    if r != position || e != key {
                        problems.append("position \(position): rank says \(r), entry(at:) \(e == key ? "agrees" : "disagrees")")
                        if problems.count > 20 { return }
                    }
                    position += 1
                    if position % walkedBetweenCalls == 0 { periodically?() }
                    found = try cursor.next()
                }
            }
            if try entry(at: entryCount, in: txn) != nil { problems.append("entry(at: count) is not nil") }
        }
        return problems
    }
}
