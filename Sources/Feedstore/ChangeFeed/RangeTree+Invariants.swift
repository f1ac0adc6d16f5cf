extension RangeTree {
    /// Every way the tree can be wrong, or none: nodes in order of (lower bound, serial), each
    /// node's priority at least its children's, each node's highest upper bound and lowest lower
    /// bound those of its subtree, and ``count`` the number of nodes. Tests run it after randomized steps.
    func invariantViolations() -> [String] {
        var problems: [String] = []
        var nodes = 0
        var previous: (lower: [UInt8]?, serial: UInt64)?
        /// The subtree's highest upper bound and lowest lower bound, recomputed from its nodes.
        func walk(_ node: Node?) -> (highest: Upper, lowest: [UInt8]?)? {
            guard let node else { return nil }
            let left = walk(node.left)
            nodes += 1
            if let previous, !Self.sorts(previous, before: (node.lower, node.serial)) {
                problems.append("node \(node.serial) is out of order")
            }
            previous = (node.lower, node.serial)
            for child in [node.left, node.right].compactMap({ $0 }) where child.priority > node.priority {
                problems.append("node \(child.serial) has a higher priority than its parent \(node.serial)")
            }
            let right = walk(node.right)
            var highest = node.upper
            for child in [left, right].compactMap({ $0 }) { highest = .max(highest, child.highest) }
            // In order, a subtree's first node has its lowest lower bound.
            let lowest = left.map(\.lowest) ?? node.lower
            if !highest.isEqual(to: node.highest) { problems.append("node \(node.serial)'s highest upper bound is wrong") }
            if node.lowest != lowest { problems.append("node \(node.serial)'s lowest lower bound is wrong") }
            return (highest, lowest)
        }
        _ = walk(root)
        if nodes != count { problems.append("count is \(count), the tree holds \(nodes)") }
        return problems
    }

    private static func sorts(_ a: (lower: [UInt8]?, serial: UInt64), before b: (lower: [UInt8]?, serial: UInt64)) -> Bool {
        switch (a.lower, b.lower) {
        case (nil, nil): a.serial < b.serial
        case (nil, _): true
        case (_, nil): false
        case let (x?, y?): x.sortsBefore(y) || (x == y && a.serial < b.serial)
        }
    }
}
