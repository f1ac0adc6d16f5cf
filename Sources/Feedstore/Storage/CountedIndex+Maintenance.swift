extension CountedIndex {
    /// One node on the way from the root to a bucket, and the child taken there.
    struct PathStep {
        var level: Int
        var fence: [UInt8]
        var child: Int
    }

    /// Counts a new entry; the entry itself must already be in ``entries``.
    /// - Complexity: O(log n) amortized (one count per level, and a rare split).
    func insert(_ key: [UInt8], in txn: borrowing LMDBTransaction) throws {
        let change = try adjust(key, by: 1, in: txn)
        guard change.size > limits.maximumBucket else { return }
        let path = try self.path(to: key, in: txn)
        let leaf = path[path.count - 1]
        var node = try withNode(1, leaf.fence, in: txn) { try CountNode($0) }
        // Split the bucket in half at a separator between its two middle entries.
        let size = change.size, half = size / 2
        let separator: [UInt8] = try txn.withCursor(entries) { cursor in
            guard try cursor.seek(atOrAfter: node.fences[leaf.child]) else { throw shortBucket() }
            for _ in 0..<(half - 1) { guard try cursor.next() else { throw shortBucket() } }
            let previous = Array(cursor.key)
            guard try cursor.next() else { throw shortBucket() }
            return Self.shortestSeparator(after: previous, upTo: Array(cursor.key))
        }
        node.counts[leaf.child] = half
        node.fences.insert(separator, at: leaf.child + 1)
        node.counts.insert(size - half, at: leaf.child + 1)
        try store(node, at: path.count - 1, of: path, in: txn)
    }

    /// Uncounts a removed entry; the entry itself must already be gone from ``entries``.
    /// - Complexity: O(log n) amortized.
    func remove(_ key: [UInt8], in txn: borrowing LMDBTransaction) throws {
        // Merge the bucket with a neighbour when both together are at most half full.
        guard try adjust(key, by: -1, in: txn).mergeable else { return }
        let path = try self.path(to: key, in: txn)
        let leaf = path[path.count - 1]
        var node = try withNode(1, leaf.fence, in: txn) { try CountNode($0) }
        let left = leaf.child > 0 ? leaf.child - 1 : 0
        guard left + 1 < node.counts.count, node.counts[left] + node.counts[left + 1] <= limits.maximumBucket / 2 else { return }
        node.counts[left] += node.counts[left + 1]
        node.counts.remove(at: left + 1)
        node.fences.remove(at: left + 1)
        try storeShrunk(node, at: path.count - 1, of: path, in: txn)
    }

    /// What an adjustment left at the bottom of the tree.
    private struct BucketChange {
        /// The bucket's new size.
        var size = 0
        /// Whether the bucket and a neighbour now hold at most half a bucket together.
        var mergeable = false
    }

    /// Adds `delta` to the count of every node's child on the way to `key`'s bucket, patching
    /// each node in place (no node is parsed or copied: the common case allocates nothing).
    private func adjust(_ key: [UInt8], by delta: Int, in txn: borrowing LMDBTransaction) throws -> BucketChange {
        var change = BucketChange()
        _ = try descend(in: txn) { level, node, cursor in
            let child = node.child(containing: key)
            let updated = node.entries(child) + delta
            guard updated >= 0 else { throw FeedstoreError.corruptData(what: "index counts", reason: "level \(level) count below zero") }
            // Patch the child's 8-byte count where it is stored, copying nothing else.
            try cursor.modifyCurrentInPlace { bytes in
                bytes.storeBytes(of: UInt64(updated).littleEndian, toByteOffset: CountNode.countOffset(child), as: UInt64.self)
            }
            if level == 1 {
                change.size = updated
                // `node` may show the count before the patch; `updated` is the new one.
                let left = child > 0 ? child - 1 : 0
                if left + 1 < node.count {
                    let pair = (left == child ? updated : node.entries(left)) + (left + 1 == child ? updated : node.entries(left + 1))
                    change.mergeable = pair <= limits.maximumBucket / 2
                }
            }
            return child
        }
        return change
    }

    /// The nodes from the root to `key`'s bucket, for the rare split or merge.
    private func path(to key: [UInt8], in txn: borrowing LMDBTransaction) throws -> [PathStep] {
        var path: [PathStep] = []
        var fence: [UInt8] = []
        _ = try descend(in: txn) { level, node, _ in
            let child = node.child(containing: key)
            path.append(PathStep(level: level, fence: fence, child: child))
            fence = node.fence(child)
            return child
        }
        return path
    }

    private func shortBucket() -> FeedstoreError {
        .corruptData(what: "index counts", reason: "bucket holds fewer entries than counted")
    }

    private func setHeight(_ height: Int, in txn: borrowing LMDBTransaction) throws {
        try txn.put(counts, key: Self.heightKey, value: [UInt8(height)])
    }

    func fits(_ node: CountNode, fence: [UInt8]) -> Bool {
        node.counts.count <= limits.maximumChildren && node.byteCount + fence.count + 1 <= limits.maximumNodeBytes
    }

    /// Writes `path[step]`'s node after it gained a child, splitting it (and its ancestors) when
    /// it no longer fits; a root split adds a level.
    private func store(_ node: CountNode, at step: Int, of path: [PathStep], in txn: borrowing LMDBTransaction) throws {
        let level = path[step].level, fence = path[step].fence
        if fits(node, fence: fence) {
            try txn.put(counts, key: Self.nodeKey(level, fence), value: node.encoded())
            return
        }
        let middle = node.counts.count / 2
        let left = CountNode(fences: Array(node.fences[..<middle]), counts: Array(node.counts[..<middle]))
        let right = CountNode(fences: Array(node.fences[middle...]), counts: Array(node.counts[middle...]))
        try txn.put(counts, key: Self.nodeKey(level, fence), value: left.encoded())
        try txn.put(counts, key: Self.nodeKey(level, right.fences[0]), value: right.encoded())
        if step == 0 {
            let root = CountNode(fences: [[], right.fences[0]], counts: [left.total, right.total])
            try txn.put(counts, key: Self.nodeKey(level + 1, []), value: root.encoded())
            return try setHeight(level + 1, in: txn)
        }
        let parentStep = path[step - 1]
        var parent = try withNode(parentStep.level, parentStep.fence, in: txn) { try CountNode($0) }
        parent.counts[parentStep.child] = left.total
        parent.fences.insert(right.fences[0], at: parentStep.child + 1)
        parent.counts.insert(right.total, at: parentStep.child + 1)
        try store(parent, at: step - 1, of: path, in: txn)
    }

    /// Writes `path[step]`'s node after it lost a child, merging it with a sibling when both
    /// together fit in one node; a root left with one child gives way to that child.
    private func storeShrunk(_ node: CountNode, at step: Int, of path: [PathStep], in txn: borrowing LMDBTransaction) throws {
        let level = path[step].level, fence = path[step].fence
        try txn.put(counts, key: Self.nodeKey(level, fence), value: node.encoded())
        if step == 0 { return try shrinkRoot(in: txn) }
        guard node.counts.count <= limits.maximumChildren / 4 else { return }
        let parentStep = path[step - 1]
        var parent = try withNode(parentStep.level, parentStep.fence, in: txn) { try CountNode($0) }
        guard parent.counts.count > 1 else { return }
        let leftIndex = parentStep.child > 0 ? parentStep.child - 1 : 0
        let leftFence = parent.fences[leftIndex], rightFence = parent.fences[leftIndex + 1]
        var left = try withNode(level, leftFence, in: txn) { try CountNode($0) }
        let right = try withNode(level, rightFence, in: txn) { try CountNode($0) }
        left.fences += right.fences
        left.counts += right.counts
        guard left.counts.count <= limits.maximumChildren / 2, fits(left, fence: leftFence) else { return }
        try txn.put(counts, key: Self.nodeKey(level, leftFence), value: left.encoded())
        try txn.delete(counts, key: Self.nodeKey(level, rightFence))
        parent.counts[leftIndex] += parent.counts[leftIndex + 1]
        parent.counts.remove(at: leftIndex + 1)
        parent.fences.remove(at: leftIndex + 1)
        try storeShrunk(parent, at: step - 1, of: path, in: txn)
    }

    /// While the root has a single child node, that child (fence "") becomes the root.
    private func shrinkRoot(in txn: borrowing LMDBTransaction) throws {
        var height = try height(in: txn)
        while height > 1, try withNode(height, [], in: txn, { $0.count }) == 1 {
            try txn.delete(counts, key: Self.nodeKey(height, []))
            height -= 1
            try setHeight(height, in: txn)
        }
    }

    /// The shortest key that sorts after `previous` and at or before `next` (a prefix of `next`),
    /// which keeps fences, and so nodes, small.
    static func shortestSeparator(after previous: [UInt8], upTo next: [UInt8]) -> [UInt8] {
        var i = 0
        while i < previous.count, i < next.count, previous[i] == next[i] { i += 1 }
        return Array(next.prefix(i + 1))
    }

    /// Rebuilds the tree from the entries in one pass, filling buckets and nodes to ¾.
    /// - Complexity: O(n).
    func rebuild(in txn: borrowing LMDBTransaction) throws {
        try txn.drop(counts, delete: false)
        let bucketFill = limits.maximumBucket * 3 / 4
        var children: [(fence: [UInt8], count: Int)] = [([], 0)]
        try txn.withCursor(entries) { cursor in
            var previous: [UInt8] = []
            var found = try cursor.first()
            while found {
                let key = Array(cursor.key)
                if children[children.count - 1].count == bucketFill {
                    children.append((Self.shortestSeparator(after: previous, upTo: key), 0))
                }
                children[children.count - 1].count += 1
                previous = key
                found = try cursor.next()
            }
        }
        var level = 1
        while true {
            // Group this level's children into nodes filled to ¾ (or to the byte limit).
            var nodes: [CountNode] = []
            var current = CountNode(fences: [], counts: [])
            for child in children {
                let candidate = CountNode(fences: current.fences + [child.fence], counts: current.counts + [child.count])
                if !current.counts.isEmpty,
                   current.counts.count >= limits.maximumChildren * 3 / 4 || !fits(candidate, fence: current.fences[0]) {
                    nodes.append(current)
                    current = CountNode(fences: [child.fence], counts: [child.count])
                } else {
                    current = candidate
                }
            }
            nodes.append(current)
            for node in nodes { try txn.put(counts, key: Self.nodeKey(level, node.fences[0]), value: node.encoded()) }
            if nodes.count == 1 { break }
            children = nodes.map { ($0.fences[0], $0.total) }
            level += 1
        }
        try setHeight(level, in: txn)
    }
}
