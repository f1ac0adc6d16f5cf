extension CountedIndex {
    /// Counts a new entry; the entry itself must already be in ``entries``.
    /// - Complexity: O(log n) amortized (one count per level, and a rare split).
    func insert(_ key: [UInt8], in txn: borrowing LMDBTransaction) throws {
        let bucket = try adjust(key, by: 1, in: txn)
        try splitIfNeeded(level: 1, fence: bucket, in: txn)
    }

    /// Uncounts a removed entry; the entry itself must already be gone from ``entries``.
    /// - Complexity: O(log n) amortized.
    func remove(_ key: [UInt8], in txn: borrowing LMDBTransaction) throws {
        let bucket = try adjust(key, by: -1, in: txn)
        try mergeIfSmall(level: 1, fence: bucket, in: txn)
    }

    /// Adds `delta` to the count of every fence above `key`; returns its bucket's fence.
    private func adjust(_ key: [UInt8], by delta: Int, in txn: borrowing LMDBTransaction) throws -> [UInt8] {
        let height = try height(in: txn)
        return try txn.withCursor(counts) { cursor in
            var bucket: [UInt8] = []
            var target = [0] + key
            for level in 1...height {
                target[0] = UInt8(level)
                try position(cursor, atFenceFor: target, level: level)
                var node = try Node(cursor.value)
                node.count += delta
                guard node.count >= 0 else {
                    throw FeedstoreError.corruptData(what: "index counts", reason: "level \(level) count below zero")
                }
                try cursor.replaceCurrent(node.encoded)
                if level == 1 { bucket = Array(cursor.key.dropFirst()) }
            }
            return bucket
        }
    }

    /// Positions `cursor` on the level's greatest fence <= `key` and returns that fence.
    func locate(_ level: Int, _ key: [UInt8], _ cursor: borrowing LMDBCursor) throws -> [UInt8] {
        try position(cursor, atFenceFor: [UInt8(level)] + key, level: level)
        return Array(cursor.key.dropFirst())
    }

    /// Positions `cursor` on the greatest counts key <= `target` (level byte + key) of `level`.
    private func position(_ cursor: borrowing LMDBCursor, atFenceFor target: [UInt8], level: Int) throws {
        if try cursor.seek(atOrAfter: target) {
            if cursor.key.compare(with: target) == 0 { return }
            guard try cursor.previous() else { throw missingFence(level, []) }
        } else {
            guard try cursor.last() else { throw missingFence(level, []) }
        }
        guard cursor.key.first == UInt8(level) else { throw missingFence(level, []) }
    }

    private func node(_ level: Int, _ fence: [UInt8], in txn: borrowing LMDBTransaction) throws -> Node {
        guard let node = try txn.withValue(counts, key: [UInt8(level)] + fence, { try Node($0) }) else {
            throw missingFence(level, fence)
        }
        return node
    }

    private func put(_ level: Int, _ fence: [UInt8], _ node: Node, in txn: borrowing LMDBTransaction) throws {
        try txn.put(counts, key: [UInt8(level)] + fence, value: node.encoded)
    }

    private func setHeight(_ height: Int, in txn: borrowing LMDBTransaction) throws {
        try txn.put(counts, key: Self.heightKey, value: [UInt8(height)])
    }

    /// The number of fences on a level (only used on the top level, which is small).
    private func fenceCount(_ level: Int, in txn: borrowing LMDBTransaction) throws -> Int {
        try txn.withCursor(counts) { cursor in
            var n = 0
            var found = try cursor.seek(atOrAfter: [UInt8(level)])
            while found, cursor.key.first == UInt8(level) {
                n += 1
                found = try cursor.next()
            }
            return n
        }
    }

    /// Splits a fence's span in two when it holds too many entries (level 1) or children.
    private func splitIfNeeded(level: Int, fence: [UInt8], in txn: borrowing LMDBTransaction) throws {
        let node = try node(level, fence, in: txn)
        let size = level == 1 ? node.count : node.children
        guard size > (level == 1 ? Self.maximumBucket : Self.maximumChildren) else { return }
        let half = size / 2
        var left = Node(count: 0, children: 0)
        let middle: [UInt8]
        if level == 1 {
            middle = try txn.withCursor(entries) { cursor in
                var found = try cursor.seek(atOrAfter: fence)
                for _ in 0..<half where found { found = try cursor.next() }
                guard found else { throw FeedstoreError.corruptData(what: "index counts", reason: "bucket shorter than its count") }
                return Array(cursor.key)
            }
            left.count = half
        } else {
            middle = try txn.withCursor(counts) { cursor in
                guard try cursor.seek(atOrAfter: [UInt8(level - 1)] + fence) else { throw missingFence(level - 1, fence) }
                for _ in 0..<half {
                    left.count += try Node(cursor.value).count
                    guard try cursor.next(), cursor.key.first == UInt8(level - 1) else { throw missingFence(level - 1, fence) }
                }
                return Array(cursor.key.dropFirst())
            }
            left.children = half
        }
        let right = Node(count: node.count - left.count, children: level == 1 ? 0 : node.children - half)
        guard right.count >= 0, right.children >= 0 else {
            throw FeedstoreError.corruptData(what: "index counts", reason: "level \(level) counts fewer entries than its children hold")
        }
        try put(level, fence, left, in: txn)
        try put(level, middle, right, in: txn)

        let height = try height(in: txn)
        if level == height {
            let fences = try fenceCount(level, in: txn)
            if fences > Self.maximumChildren {
                try put(level + 1, [], Node(count: try total(in: txn), children: fences), in: txn)
                try setHeight(level + 1, in: txn)
                try splitIfNeeded(level: level + 1, fence: [], in: txn)
            }
            return
        }
        let parent = try txn.withCursor(counts) { try locate(level + 1, fence, $0) }
        var parentNode = try self.node(level + 1, parent, in: txn)
        parentNode.children += 1
        try put(level + 1, parent, parentNode, in: txn)
        try splitIfNeeded(level: level + 1, fence: parent, in: txn)
    }

    /// Merges a fence's span into its left sibling when both together are at most half full.
    /// The first fence under a parent (itself a fence one level up) never merges left.
    private func mergeIfSmall(level: Int, fence: [UInt8], in txn: borrowing LMDBTransaction) throws {
        let height = try height(in: txn)
        guard !fence.isEmpty else { return try shrinkIfSingle(height, in: txn) }
        if level < height, try txn.get(counts, key: [UInt8(level + 1)] + fence) != nil { return }
        let node = try node(level, fence, in: txn)
        let (leftFence, leftNode) = try txn.withCursor(counts) { cursor -> ([UInt8], Node) in
            guard try cursor.seek(atOrAfter: [UInt8(level)] + fence), try cursor.previous(), cursor.key.first == UInt8(level) else {
                throw missingFence(level, fence)
            }
            return (Array(cursor.key.dropFirst()), try Node(cursor.value))
        }
        let combined = level == 1 ? node.count + leftNode.count : node.children + leftNode.children
        guard combined <= (level == 1 ? Self.maximumBucket : Self.maximumChildren) / 2 else { return }
        try put(level, leftFence, Node(count: leftNode.count + node.count, children: leftNode.children + node.children), in: txn)
        try txn.delete(counts, key: [UInt8(level)] + fence)
        if level == height { return try shrinkIfSingle(height, in: txn) }
        let parent = try txn.withCursor(counts) { try locate(level + 1, fence, $0) }
        var parentNode = try self.node(level + 1, parent, in: txn)
        parentNode.children -= 1
        try put(level + 1, parent, parentNode, in: txn)
        try mergeIfSmall(level: level + 1, fence: parent, in: txn)
    }

    /// Removes the top level while it holds a single fence (over a level that can stand alone).
    private func shrinkIfSingle(_ height: Int, in txn: borrowing LMDBTransaction) throws {
        var height = height
        while height > 1, try fenceCount(height, in: txn) == 1 {
            try txn.delete(counts, key: [UInt8(height)])
            height -= 1
            try setHeight(height, in: txn)
        }
    }

    /// Rebuilds every level from the entries, in one pass: buckets and groups filled to ¾.
    /// - Complexity: O(n).
    func rebuild(in txn: borrowing LMDBTransaction) throws {
        try txn.drop(counts, delete: false)
        let bucketFill = Self.maximumBucket * 3 / 4
        var level: [(fence: [UInt8], node: Node)] = [([], Node(count: 0, children: 0))]
        try txn.withCursor(entries) { cursor in
            var found = try cursor.first()
            while found {
                if level[level.count - 1].node.count == bucketFill {
                    level.append((Array(cursor.key), Node(count: 0, children: 0)))
                }
                level[level.count - 1].node.count += 1
                found = try cursor.next()
            }
        }
        var height = 1
        for item in level { try put(height, item.fence, item.node, in: txn) }
        let groupFill = Self.maximumChildren * 3 / 4
        while level.count > Self.maximumChildren {
            var upper: [(fence: [UInt8], node: Node)] = []
            for (i, item) in level.enumerated() {
                if i % groupFill == 0 { upper.append((item.fence, Node(count: 0, children: 0))) }
                upper[upper.count - 1].node.count += item.node.count
                upper[upper.count - 1].node.children += 1
            }
            height += 1
            for item in upper { try put(height, item.fence, item.node, in: txn) }
            level = upper
        }
        try setHeight(height, in: txn)
    }
}
