extension CountedIndex {
    /// Compares the counting structure with a full scan of the entries: every level's fences
    /// nest, every count and children number is exact and within bounds, and `rank` and
    /// `entry(at:)` agree with the entries' order at every position. Returns what is wrong.
    /// - Complexity: O(n log n).
    func check(in txn: borrowing LMDBTransaction, checkEveryPosition: Bool = true) throws -> [String] {
        var problems: [String] = []
        let height: Int
        do { height = try self.height(in: txn) } catch { return ["\(error)"] }
        var keys: [[UInt8]] = []
        try txn.withCursor(entries) { cursor in
            var found = try cursor.first()
            while found {
                keys.append(Array(cursor.key))
                found = try cursor.next()
            }
        }
        var levels: [[(fence: [UInt8], node: Node)]] = Array(repeating: [], count: height + 1)
        try txn.withCursor(counts) { cursor in
            var found = try cursor.first()
            while found {
                let level = Int(cursor.key.first ?? 0)
                if level == 0xFF {
                    // the height
                } else if level < 1 || level > height {
                    problems.append("fence on level \(level) above the height \(height)")
                } else {
                    levels[level].append((Array(cursor.key.dropFirst()), try Node(cursor.value)))
                }
                found = try cursor.next()
            }
        }
        for level in 1...height where levels[level].first?.fence != [] {
            problems.append("level \(level) does not start with the empty fence")
        }
        if !problems.isEmpty { return problems }
        // Level 1: each bucket's count is the number of entries in its span.
        var k = 0
        for (i, bucket) in levels[1].enumerated() {
            let end = i + 1 < levels[1].count ? levels[1][i + 1].fence : nil
            var n = 0
            while k < keys.count, end.map({ keys[k].lexicographicallyPrecedes($0) }) ?? true { n += 1; k += 1 }
            if n != bucket.node.count { problems.append("level 1 fence #\(i) counts \(bucket.node.count), holds \(n)") }
            if n > Self.maximumBucket { problems.append("level 1 fence #\(i) holds \(n) entries") }
        }
        // Upper levels: counts are sums of the children's, children are the lower fences in span.
        for level in stride(from: 2, through: height, by: 1) {
            let lower = levels[level - 1]
            var j = 0
            for (i, item) in levels[level].enumerated() {
                let end = i + 1 < levels[level].count ? levels[level][i + 1].fence : nil
                guard j < lower.count, lower[j].fence == item.fence else {
                    problems.append("level \(level) fence #\(i) is not a level \(level - 1) fence")
                    break
                }
                var sum = 0, children = 0
                while j < lower.count, end.map({ lower[j].fence.lexicographicallyPrecedes($0) }) ?? true {
                    sum += lower[j].node.count
                    children += 1
                    j += 1
                }
                if sum != item.node.count || children != item.node.children {
                    problems.append("level \(level) fence #\(i) says \(item.node.count)/\(item.node.children), children hold \(sum)/\(children)")
                }
                if children > Self.maximumChildren { problems.append("level \(level) fence #\(i) has \(children) children") }
            }
        }
        if levels[height].count > Self.maximumChildren { problems.append("top level has \(levels[height].count) fences") }
        if height > 1 && levels[height].count == 1 { problems.append("top level has a single fence") }
        if checkEveryPosition && problems.isEmpty {
            for (i, key) in keys.enumerated() {
                let r = try rank(of: key, in: txn)
                let e = try entry(at: i, in: txn)
                if r != i || e != key {
                    problems.append("position \(i): rank says \(r), entry(at:) \(e == key ? "agrees" : "disagrees")")
                    if problems.count > 20 { break }
                }
            }
            if try entry(at: keys.count, in: txn) != nil { problems.append("entry(at: count) is not nil") }
        }
        return problems
    }
}
