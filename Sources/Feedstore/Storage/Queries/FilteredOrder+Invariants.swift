extension FilteredOrder {
    /// Every way the order can be wrong, or none: keys strictly ascending across leaves, each
    /// branch's counts and smallest keys those of its children, no empty node below the root,
    /// no node over capacity, and ``count`` the number of keys. Tests run it after randomized steps.
    func invariantViolations() -> [String] {
        var problems: [String] = []
        var previous: [UInt8]?
        var seen = 0
        /// The subtree's key count and smallest key.
        func walk(_ node: Node, depth: Int, leafDepth: inout Int?) -> (count: Int, smallest: [UInt8]?) {
            if node.isLeaf {
                if let leafDepth, leafDepth != depth { problems.append("leaves at depths \(leafDepth) and \(depth)") }
                leafDepth = depth
                if node.keyCount > Self.leafCapacity { problems.append("a leaf holds \(node.keyCount) keys") }
                if node.keyCount == 0, node !== root { problems.append("an empty leaf below the root") }
                var last = 0
                for i in 0..<node.keyCount {
                    if Int(node.ends[i]) < last { problems.append("a leaf's key ends go backwards") }
                    last = Int(node.ends[i])
                    let key = node.key(i)
                    if let previous, !previous.sortsBefore(key) { problems.append("keys out of order at rank \(seen)") }
                    previous = key
                    seen += 1
                }
                if last != node.bytes.count { problems.append("a leaf's bytes run past its last key") }
                return (node.keyCount, node.keyCount > 0 ? node.key(0) : nil)
            }
            if node.children.isEmpty { problems.append("an empty branch") }
            if node.children.count > Self.branchCapacity { problems.append("a branch holds \(node.children.count) children") }
            if node.counts.count != node.children.count || node.lows.count != node.children.count {
                problems.append("a branch's counts or smallest keys do not match its children")
                return (0, nil)
            }
            var total = 0
            var smallest: [UInt8]?
            for (i, child) in node.children.enumerated() {
                let (count, low) = walk(child, depth: depth + 1, leafDepth: &leafDepth)
                if count != node.counts[i] { problems.append("a branch counts \(node.counts[i]) keys under a child that holds \(count)") }
                if low != node.lows[i] { problems.append("a branch's smallest key of child \(i) is not that child's") }
                if i == 0 { smallest = low }
                total += count
            }
            return (total, smallest)
        }
        var leafDepth: Int?
        let (total, _) = walk(root, depth: 0, leafDepth: &leafDepth)
        if total != count || seen != count { problems.append("count is \(count); the tree holds \(total) keys (\(seen) walked)") }
        return problems
    }
}
