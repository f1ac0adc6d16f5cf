extension CountedIndex {
    /// One node on the way from the root to a bucket, and the child taken there.
    struct PathStep {
        var level: Int
        var fence: [UInt8]
        var child: Int
    }

    /// An entry that joined (`delta` 1) or left (`delta` -1) the index.
    struct Change {
        var key: [UInt8]
        var delta: Int
    }

    /// Counts many entries that joined or left; they must already be in (or gone from)
    /// ``entries``. Each node on the way to a changed bucket is patched once, however many
    /// changes lie below it, so a transaction of k changes costs O(k) patches near the bottom
    /// but only one per node above. Buckets that outgrew their bound split afterwards, and
    /// buckets left small merge with a neighbour.
    /// - Complexity: O(k log n) reads, O(k + log n) node writes for k changes in the common case.
    func apply(_ changes: [Change], in txn: borrowing LMDBTransaction) throws {
        guard !changes.isEmpty else { return }
        let sorted = changes.count == 1 ? changes : Self.sortedByKey(changes)
        var reshapes: [Reshape] = []
        try txn.withCursor(counts) { cursor in
            let height = try Self.positionAtRoot(cursor)
            try patch(level: height, sorted[...], cursor, reshapes: &reshapes)
        }
        for reshape in reshapes {
            if reshape.grew {
                try splitBucket(containing: reshape.key, in: txn)
            } else {
                while try mergeBucket(containing: reshape.key, in: txn) {}
            }
        }
    }

    /// The changes in key order (changes of equal keys keep their order). The sort moves small
    /// plain values (each key's first 16 bytes as two big-endian words, zero-padded, and the
    /// change's position) and compares whole keys only where those words tie: words that differ
    /// order their keys as the keys do, since a zero-padded shorter key is a prefix of the other
    /// or differs from it at a real byte.
    static func sortedByKey(_ changes: [Change]) -> [Change] {
        var order = changes.indices.map { i in
            changes[i].key.withUnsafeBytes { key in
                var words: (UInt64, UInt64) = (0, 0)
                withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: key.prefix(16))) }
                return (first: UInt64(bigEndian: words.0), second: UInt64(bigEndian: words.1), index: i)
            }
        }
        order.sort { a, b in
            if a.first != b.first { return a.first < b.first }
            if a.second != b.second { return a.second < b.second }
            let c = changes[a.index].key.withUnsafeBytes { $0.compare(with: changes[b.index].key) }
            return c != 0 ? c < 0 : a.index < b.index
        }
        return order.map { changes[$0.index] }
    }

    /// A bucket that must split (it grew past its bound) or may merge, named by a key inside it.
    private struct Reshape {
        var key: [UInt8]
        var grew: Bool
    }

    /// Adds the changes' deltas to the counts of the node `cursor` rests on (at `level`), writing
    /// the node once, then does the same below for each child that has changes.
    private func patch(level: Int, _ changes: ArraySlice<Change>, _ cursor: borrowing LMDBCursor,
                       reshapes: inout [Reshape]) throws
    {
        let original = try CountNodeView(cursor.value)
        // A node whose children's counts all stay the same (an entry that moved within one
        // child) is not written: writing it would copy its page into the commit for nothing.
        var countsChange = false
        var start = changes.startIndex
        while start < changes.endIndex, !countsChange {
            let run = Self.run(of: changes, from: start, in: original)
            countsChange = run.delta != 0
            start = run.end
        }
        if countsChange {
            // Patch each changed child's 8-byte count where it is stored, copying nothing else.
            try cursor.modifyCurrentInPlace { bytes in
                var changed: Range<Int>?
                var start = changes.startIndex
                while start < changes.endIndex {
                    let run = Self.run(of: changes, from: start, in: original)
                    let updated = original.entries(run.child) + run.delta
                    guard updated >= 0 else { throw FeedstoreError.corruptData(what: "index counts", reason: "level \(level) count below zero") }
                    if run.delta != 0 {
                        let offset = CountNode.countOffset(run.child)
                        bytes.storeBytes(of: UInt64(updated).littleEndian, toByteOffset: offset, as: UInt64.self)
                        changed = (changed?.lowerBound ?? offset)..<(offset + 8)
                    }
                    start = run.end
                }
                return changed
            }
        }
        // The cursor now lends the patched node (same fences, new counts).
        let node = countsChange ? try CountNodeView(cursor.value) : original
        if level == 1 {
            start = changes.startIndex
            while start < changes.endIndex {
                let run = Self.run(of: changes, from: start, in: node)
                if node.entries(run.child) > limits.maximumBucket {
                    reshapes.append(Reshape(key: changes[start].key, grew: true))
                } else if run.delta < 0 {
                    let left = run.child > 0 ? run.child - 1 : 0
                    if left + 1 < node.count, node.entries(left) + node.entries(left + 1) <= limits.maximumBucket / 2 {
                        reshapes.append(Reshape(key: changes[start].key, grew: false))
                    }
                }
                start = run.end
            }
            return
        }
        // Each child's node key is copied before the cursor moves: the node's bytes are only
        // lent while the cursor rests on it.
        func childKey(_ child: Int) -> [UInt8] { [UInt8(level - 1)] + Array(node.fenceBytes(child)) }
        var below: [(changes: ArraySlice<Change>, key: [UInt8])] = []
        start = changes.startIndex
        while start < changes.endIndex {
            let run = Self.run(of: changes, from: start, in: node)
            below.append((changes[start..<run.end], childKey(run.child)))
            start = run.end
        }
        for (changes, key) in below {
            guard try cursor.seek(exactly: key) else { throw Self.missingNode(level - 1, key.count - 1) }
            try patch(level: level - 1, changes, cursor, reshapes: &reshapes)
        }
    }

    /// The child of `node` that the change at `start` falls in, where the run of changes in that
    /// child ends (changes are sorted, and a child holds those below the next child's fence),
    /// and the run's total delta.
    private static func run(of changes: ArraySlice<Change>, from start: Int, in node: CountNodeView) -> (child: Int, end: Int, delta: Int) {
        let child = node.child(containing: changes[start].key)
        var end = start, delta = 0
        let next = child + 1 < node.count ? node.fenceBytes(child + 1) : nil
        while end < changes.endIndex, next.map({ $0.compare(with: changes[end].key) > 0 }) ?? true {
            delta += changes[end].delta
            end += 1
        }
        return (child, end, delta)
    }

    /// Splits the bucket holding `key` into buckets filled to about ¾ when it outgrew its bound,
    /// walking its entries once to find the separators.
    private func splitBucket(containing key: [UInt8], in txn: borrowing LMDBTransaction) throws {
        let path = try self.path(to: key, in: txn)
        let leaf = path[path.count - 1]
        let (size, fence) = try withNode(1, leaf.fence, in: txn) { ($0.entries(leaf.child), $0.fence(leaf.child)) }
        guard size > limits.maximumBucket else { return }
        let pieces = max(2, (size + bucketFill - 1) / bucketFill)
        let starts = (1..<pieces).map { $0 * size / pieces }
        let separators: [[UInt8]] = try txn.withCursor(entries) { cursor in
            guard try cursor.seek(atOrAfter: fence) else { throw shortBucket() }
            var separators: [[UInt8]] = []
            var position = 0, previous: [UInt8] = []
            for start in starts {
                while position < start - 1 {
                    guard try cursor.next() else { throw shortBucket() }
                    position += 1
                }
                previous = Array(cursor.key)
                guard try cursor.next() else { throw shortBucket() }
                position += 1
                separators.append(Self.shortestSeparator(after: previous, upTo: Array(cursor.key)))
            }
            return separators
        }
        let bounds = [0] + starts + [size]
        let sizes = (0..<pieces).map { bounds[$0 + 1] - bounds[$0] }
        // Most splits leave the node within its bounds: its stored bytes are then edited as they
        // are, without parsing every fence into an array and encoding them again.
        let edited: [UInt8]? = try withNode(1, leaf.fence, in: txn) { view in
            let byteCount = view.bytes.count + 10 * separators.count + separators.reduce(0) { $0 + $1.count }
            guard fits(children: view.count + separators.count, byteCount: byteCount, fenceLength: view.fenceBytes(0).count) else { return nil }
            try view.validate()
            return view.replacingChild(leaf.child, withCounts: sizes, separators: separators)
        }
        if let edited {
            try txn.put(counts, key: Self.nodeKey(1, leaf.fence), value: edited)
            return
        }
        var node = try withNode(1, leaf.fence, in: txn) { try CountNode($0) }
        node.counts.replaceSubrange(leaf.child...leaf.child, with: sizes)
        node.fences.insert(contentsOf: separators, at: leaf.child + 1)
        try store(node, at: path.count - 1, of: path, in: txn)
    }

    /// Entries per bucket after a split or a rebuild.
    var bucketFill: Int { max(1, limits.maximumBucket * 3 / 4) }

    /// Merges the bucket holding `key` with a neighbour when both together hold at most half a
    /// bucket; returns whether it did.
    private func mergeBucket(containing key: [UInt8], in txn: borrowing LMDBTransaction) throws -> Bool {
        let path = try self.path(to: key, in: txn)
        let leaf = path[path.count - 1]
        var node = try withNode(1, leaf.fence, in: txn) { try CountNode($0) }
        let left = leaf.child > 0 ? leaf.child - 1 : 0
        guard left + 1 < node.counts.count, node.counts[left] + node.counts[left + 1] <= limits.maximumBucket / 2 else { return false }
        node.counts[left] += node.counts[left + 1]
        node.counts.remove(at: left + 1)
        node.fences.remove(at: left + 1)
        try storeShrunk(node, at: path.count - 1, of: path, in: txn)
        return true
    }

    /// The nodes from the root to `key`'s bucket, for the rare split or merge.
    private func path(to key: [UInt8], in txn: borrowing LMDBTransaction) throws -> [PathStep] {
        var path: [PathStep] = []
        var fence: [UInt8] = []
        try descend(in: txn, { level, node in
            let child = node.child(containing: key)
            path.append(PathStep(level: level, fence: fence, child: child))
            fence = node.fence(child)
            return child
        }, then: { _ in })
        return path
    }

    private func shortBucket() -> FeedstoreError {
        .corruptData(what: "index counts", reason: "bucket holds fewer entries than counted")
    }

    private func setHeight(_ height: Int, in txn: borrowing LMDBTransaction) throws {
        try txn.put(counts, key: Self.heightKey, value: [UInt8(height)])
    }

    func fits(_ node: CountNode, fence: [UInt8]) -> Bool {
        fits(children: node.counts.count, byteCount: node.byteCount, fenceLength: fence.count)
    }

    /// Whether a node of `children` children taking `byteCount` bytes, stored under a fence of
    /// `fenceLength` bytes, is within the limits.
    func fits(children: Int, byteCount: Int, fenceLength: Int) -> Bool {
        children <= limits.maximumChildren && byteCount + fenceLength + 1 <= limits.maximumNodeBytes
    }

    /// Writes `path[step]`'s node after it gained children, splitting it (and its ancestors) into
    /// as many nodes as it takes to fit; a root split adds a level.
    private func store(_ node: CountNode, at step: Int, of path: [PathStep], in txn: borrowing LMDBTransaction) throws {
        let level = path[step].level
        let pieces = split(node)
        for piece in pieces { try txn.put(counts, key: Self.nodeKey(level, piece.fences[0]), value: piece.encoded()) }
        guard pieces.count > 1 else { return }
        let fences = pieces.map { $0.fences[0] }, totals = pieces.map(\.total)
        if step == 0 {
            try setHeight(level + 1, in: txn)
            return try store(CountNode(fences: fences, counts: totals), at: 0, of: [PathStep(level: level + 1, fence: [], child: 0)], in: txn)
        }
        let parentStep = path[step - 1]
        var parent = try withNode(parentStep.level, parentStep.fence, in: txn) { try CountNode($0) }
        parent.counts.replaceSubrange(parentStep.child...parentStep.child, with: totals)
        parent.fences.insert(contentsOf: fences.dropFirst(), at: parentStep.child + 1)
        try store(parent, at: step - 1, of: path, in: txn)
    }

    /// `node` as it is when it fits, or else cut into the fewest runs of children of even
    /// length that each fit.
    func split(_ node: CountNode) -> [CountNode] {
        let n = node.counts.count
        guard !fits(node, fence: node.fences[0]) else { return [node] }
        var parts = max(2, (n + limits.maximumChildren - 1) / limits.maximumChildren)
        while true {
            let pieces = (0..<parts).map { p in
                let range = (p * n / parts)..<((p + 1) * n / parts)
                return CountNode(fences: Array(node.fences[range]), counts: Array(node.counts[range]))
            }
            if parts >= n || pieces.allSatisfy({ fits($0, fence: $0.fences[0]) }) { return pieces }
            parts += 1
        }
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
