/// Key ranges, each with a value, that answer "which ranges contain this key" in O(log m + hits)
/// for m ranges: how a commit's index keys find the watchers they concern without looking at
/// the others. A treap ordered by lower bound, each node knowing the lowest lower bound and the
/// highest upper bound below it, so a search skips every subtree whose ranges all start after
/// the key or all end at or before it.
/// Adding and removing a range cost O(log m) (expected).
final class RangeTree<Value> {
    /// A range's upper bound, or no bound (it contains every key from its lower bound on).
    enum Upper {
        case key([UInt8])
        case unbounded

        /// Whether keys below this bound include `key`.
        func isAbove(_ key: UnsafeRawBufferPointer) -> Bool {
            switch self {
            case .unbounded: true
            case let .key(upper): key.compare(with: upper) < 0
            }
        }

        func isEqual(to other: Upper) -> Bool {
            switch (self, other) {
            case (.unbounded, .unbounded): true
            case let (.key(x), .key(y)): x == y
            default: false
            }
        }

        static func max(_ a: Upper, _ b: Upper) -> Upper {
            switch (a, b) {
            case (.unbounded, _), (_, .unbounded): .unbounded
            case let (.key(x), .key(y)): x.sortsBefore(y) ? b : a
            }
        }
    }

    final class Node {
        let lower: [UInt8]?
        let upper: Upper
        /// Tells apart ranges with equal lower bounds (the order among them is arbitrary).
        let serial: UInt64
        let priority: UInt64
        let value: Value
        var left: Node?
        var right: Node?
        /// The highest upper bound in this subtree.
        var highest: Upper
        /// The lowest lower bound in this subtree (nil: unbounded), its leftmost node's.
        var lowest: [UInt8]?

        init(lower: [UInt8]?, upper: Upper, serial: UInt64, value: Value) {
            self.lower = lower
            self.upper = upper
            self.serial = serial
            // A hash of the serial: priorities need only look random to keep the treap balanced.
            var z = serial &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            priority = z ^ (z >> 31)
            self.value = value
            highest = upper
            lowest = lower
        }

        func update() {
            var h = upper
            if let left { h = .max(h, left.highest) }
            if let right { h = .max(h, right.highest) }
            highest = h
            lowest = left.map(\.lowest) ?? lower
        }

        /// Whether this node sorts before a range starting at `lower` with `serial`.
        func sortsBefore(_ lower: [UInt8]?, _ serial: UInt64) -> Bool {
            switch (self.lower, lower) {
            case (nil, nil): self.serial < serial
            case (nil, _): true
            case (_, nil): false
            case let (a?, b?): a.sortsBefore(b) || (a == b && self.serial < serial)
            }
        }
    }

    private(set) var root: Node?
    /// How many ranges the tree holds.
    private(set) var count = 0

    /// Adds `range` with `value`; `serial` must be unique among the tree's ranges and is what
    /// ``remove(_:serial:)`` takes back. An empty range is not added (no key can find it).
    func insert(_ range: KeyRange, serial: UInt64, value: Value) {
        guard !range.isEmpty else { return }
        let node = Node(lower: range.lower, upper: range.upper.map { .key($0) } ?? .unbounded, serial: serial, value: value)
        let (low, high) = Self.split(root, before: range.lower, serial)
        root = Self.merge(Self.merge(low, node), high)
        count += 1
    }

    /// Removes the range added with `serial` (and lower bound `range.lower`).
    func remove(_ range: KeyRange, serial: UInt64) {
        guard !range.isEmpty else { return }
        let (low, rest) = Self.split(root, before: range.lower, serial)
        let (found, high) = Self.split(rest, before: range.lower, serial + 1)
        if found != nil { count -= 1 }
        root = Self.merge(low, high)
    }

    /// Calls `body` with the value of every range that contains `key`.
    /// - Complexity: O(log m + h) expected, for h ranges found.
    func forEach(containing key: [UInt8], _ body: (Value) -> Void) {
        key.withUnsafeBytes { Self.visit(root, key: $0, body) }
    }

    /// Calls `body` with the value of every range.
    func forEachValue(_ body: (Value) -> Void) {
        func visit(_ node: Node?) {
            guard let node else { return }
            visit(node.left)
            body(node.value)
            visit(node.right)
        }
        visit(root)
    }

    private static func visit(_ node: Node?, key: UnsafeRawBufferPointer, _ body: (Value) -> Void) {
        guard let node, node.highest.isAbove(key) else { return }
        if let lowest = node.lowest, key.compare(with: lowest) < 0 { return }
        visit(node.left, key: key, body)
        // Ranges in the right subtree start at or after this one: past the key, so are they.
        if let lower = node.lower, key.compare(with: lower) < 0 { return }
        if node.upper.isAbove(key) { body(node.value) }
        visit(node.right, key: key, body)
    }

    /// Splits into the nodes before (`lower`, `serial`) and the rest.
    private static func split(_ node: Node?, before lower: [UInt8]?, _ serial: UInt64) -> (Node?, Node?) {
        guard let node else { return (nil, nil) }
        if node.sortsBefore(lower, serial) {
            let (a, b) = split(node.right, before: lower, serial)
            node.right = a
            node.update()
            return (node, b)
        } else {
            let (a, b) = split(node.left, before: lower, serial)
            node.left = b
            node.update()
            return (a, node)
        }
    }

    /// Joins two treaps whose every node of `a` sorts before every node of `b`.
    private static func merge(_ a: Node?, _ b: Node?) -> Node? {
        guard let a else { return b }
        guard let b else { return a }
        if a.priority > b.priority {
            a.right = merge(a.right, b)
            a.update()
            return a
        } else {
            b.left = merge(a, b.left)
            b.update()
            return b
        }
    }
}
