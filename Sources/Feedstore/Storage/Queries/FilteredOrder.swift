/// The entry keys of an index range that pass a query's filter, in index order, counted: an
/// in-memory B-tree whose branches know how many keys each child holds. It answers what the
/// counted index answers for a plain range — a key's rank, the key at a rank, how many keys lie
/// between two keys — in O(log n) for n matches, and takes a changed record's keys out and in in
/// O(log n). A filtered watcher builds one by one pass over its range and keeps it per commit;
/// a read transaction builds one for the filtered queries it counts or positions.
///
/// Leaves hold their keys packed in one buffer (an index key is some 20–40 bytes), so a match
/// costs its key's bytes and a few more (``bytesPerMatch``).
final class FilteredOrder {
    /// Keys per leaf, and children per branch, before the node splits in two.
    static let leafCapacity = 64
    static let branchCapacity = 64

    final class Node {
        // A leaf's keys, packed: key i runs from ends[i - 1] (0 for the first) to ends[i].
        var bytes: [UInt8] = []
        var ends: [Int32] = []
        // A branch's children, the keys under each, and each child's smallest key.
        var children: [Node] = []
        var counts: [Int] = []
        var lows: [[UInt8]] = []
        let isLeaf: Bool

        init(isLeaf: Bool) { self.isLeaf = isLeaf }

        var keyCount: Int { ends.count }
        var total: Int { isLeaf ? ends.count : counts.reduce(0, +) }

        func start(_ i: Int) -> Int { i == 0 ? 0 : Int(ends[i - 1]) }

        func withKey<R>(_ i: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
            try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[start(i)..<Int(ends[i])])) }
        }

        func key(_ i: Int) -> [UInt8] { Array(bytes[start(i)..<Int(ends[i])]) }

        /// How many of the leaf's keys sort before `key` (`orEqual`: before or equal to it).
        func leafRank(of key: UnsafeRawBufferPointer, orEqual: Bool = false) -> Int {
            var low = 0, high = ends.count
            while low < high {
                let mid = (low + high) / 2
                let c = withKey(mid) { $0.compare(with: key) }
                if c < 0 || (orEqual && c == 0) { low = mid + 1 } else { high = mid }
            }
            return low
        }

        /// The child of a branch whose keys `key` falls among: the last whose smallest key is at or
        /// before it (the first when it sorts before all).
        func childIndex(for key: UnsafeRawBufferPointer) -> Int {
            var low = 1, high = children.count
            while low < high {
                let mid = (low + high) / 2
                if lows[mid].withUnsafeBytes({ $0.compare(with: key) }) <= 0 { low = mid + 1 } else { high = mid }
            }
            return low - 1
        }

        func insertKey(_ key: UnsafeRawBufferPointer, at i: Int) {
            let at = start(i)
            bytes.insert(contentsOf: key, at: at)
            ends.insert(Int32(at + key.count), at: i)
            for j in (i + 1)..<ends.count { ends[j] += Int32(key.count) }
        }

        func removeKey(at i: Int) {
            let from = start(i), length = Int(ends[i]) - from
            bytes.removeSubrange(from..<(from + length))
            ends.remove(at: i)
            for j in i..<ends.count { ends[j] -= Int32(length) }
        }

        /// Moves the upper half of this node into a new node, which it returns.
        func split() -> Node {
            let right = Node(isLeaf: isLeaf)
            if isLeaf {
                let half = ends.count / 2, cut = Int(ends[half - 1])
                right.bytes = Array(bytes[cut...])
                right.ends = ends[half...].map { $0 - Int32(cut) }
                bytes.removeSubrange(cut...)
                ends.removeSubrange(half...)
                shrink()
            } else {
                let half = children.count / 2
                right.children = Array(children[half...])
                right.counts = Array(counts[half...])
                right.lows = Array(lows[half...])
                children.removeSubrange(half...)
                counts.removeSubrange(half...)
                lows.removeSubrange(half...)
            }
            return right
        }

        var smallestKey: [UInt8] { isLeaf ? key(0) : lows[0] }

        /// Gives a leaf's buffers the capacity of what they hold (an array keeps what it grew to).
        func shrink() {
            bytes = bytes.withUnsafeBufferPointer { old in
                [UInt8](unsafeUninitializedCapacity: old.count) { new, count in
                    _ = new.initialize(from: old)
                    count = old.count
                }
            }
            ends = ends.withUnsafeBufferPointer { old in
                [Int32](unsafeUninitializedCapacity: old.count) { new, count in
                    _ = new.initialize(from: old)
                    count = old.count
                }
            }
        }
    }

    private(set) var root = Node(isLeaf: true)
    /// How many keys the order holds.
    private(set) var count = 0

    init() {}

    // MARK: Reading

    /// How many keys sort before `key`.
    /// - Complexity: O(log n).
    func rank(of key: [UInt8]) -> Int {
        key.withUnsafeBytes { rank(of: $0) }
    }

    func rank(of key: UnsafeRawBufferPointer) -> Int {
        var node = root, before = 0
        while !node.isLeaf {
            let i = node.childIndex(for: key)
            for j in 0..<i { before += node.counts[j] }
            node = node.children[i]
        }
        return before + node.leafRank(of: key)
    }

    /// Whether the order holds `key`.
    /// - Complexity: O(log n).
    func contains(_ key: [UInt8]) -> Bool {
        key.withUnsafeBytes { search($0).holds }
    }

    /// The key at `rank`, or nil outside the order.
    /// - Complexity: O(log n).
    func key(at rank: Int) -> [UInt8]? {
        guard rank >= 0, rank < count else { return nil }
        let (leaf, i) = leaf(at: rank)
        return leaf.key(i)
    }

    /// Lends the keys from `rank` on, in order, to `visit` until it returns false.
    /// - Complexity: O(log n + k) for k keys visited.
    func forEachKey(from rank: Int, _ visit: (UnsafeRawBufferPointer) throws -> Bool) rethrows {
        guard rank >= 0, rank < count else { return }
        // The path down to the first key, so the walk can climb to the next leaf.
        var path: [(node: Node, child: Int)] = []
        var node = root, offset = rank
        while !node.isLeaf {
            var i = 0
            while offset >= node.counts[i] { offset -= node.counts[i]; i += 1 }
            path.append((node, i))
            node = node.children[i]
        }
        var i = offset
        while true {
            while i < node.keyCount {
                guard try node.withKey(i, visit) else { return }
                i += 1
            }
            // Climb to the next child, then down to its first leaf.
            while let last = path.last, last.child + 1 >= last.node.children.count { path.removeLast() }
            guard let last = path.popLast() else { return }
            path.append((last.node, last.child + 1))
            node = last.node.children[last.child + 1]
            while !node.isLeaf {
                path.append((node, 0))
                node = node.children[0]
            }
            i = 0
        }
    }

    /// The leaf and position of the key at `rank` (which is in the order).
    private func leaf(at rank: Int) -> (Node, Int) {
        var node = root, offset = rank
        while !node.isLeaf {
            var i = 0
            while offset >= node.counts[i] { offset -= node.counts[i]; i += 1 }
            node = node.children[i]
        }
        return (node, offset)
    }

    /// The way down to the leaf `key` falls in (each branch with the child taken), the leaf, how
    /// many of its keys sort before `key`, and whether it holds `key`.
    private func search(_ key: UnsafeRawBufferPointer) -> (path: [(node: Node, child: Int)], leaf: Node, position: Int, holds: Bool) {
        var path: [(node: Node, child: Int)] = []
        var node = root
        while !node.isLeaf {
            let i = node.childIndex(for: key)
            path.append((node, i))
            node = node.children[i]
        }
        let i = node.leafRank(of: key)
        return (path, node, i, i < node.keyCount && node.withKey(i) { $0.compare(with: key) == 0 })
    }

    // MARK: Changing

    /// Adds `key` after every key the order holds (building it in index order).
    /// - Complexity: O(1) amortized, O(log n) when nodes split.
    func append(_ key: UnsafeRawBufferPointer) {
        var node = root
        while !node.isLeaf { node = node.children[node.children.count - 1] }
        count += 1
        if node.keyCount < Self.leafCapacity {
            // Most appends: down the right edge again, counting the key, with no path kept.
            var branch = root
            while !branch.isLeaf {
                branch.counts[branch.counts.count - 1] += 1
                branch = branch.children[branch.children.count - 1]
            }
            node.bytes.append(contentsOf: key)
            node.ends.append(Int32(node.bytes.count))
            return
        }
        var path: [Node] = []
        var branch = root
        while !branch.isLeaf {
            path.append(branch)
            branch = branch.children[branch.children.count - 1]
        }
        // The last leaf is full: the key starts a new one, so that a built order's leaves are
        // full, not halves of split ones (a split leaf keeps the capacity it grew to).
        node.shrink()
        let leaf = Node(isLeaf: true)
        leaf.bytes = Array(key)
        leaf.ends = [Int32(key.count)]
        var child = leaf
        while let parent = path.popLast() {
            parent.counts[parent.counts.count - 1] = parent.children[parent.children.count - 1].total
            parent.children.append(child)
            parent.counts.append(child.total)
            parent.lows.append(child.smallestKey)
            for branch in path { branch.counts[branch.counts.count - 1] += 1 }
            guard parent.children.count > Self.branchCapacity else { return }
            // A full branch gives its last child to a new branch, which joins the level above.
            let last = Node(isLeaf: false)
            last.children = [parent.children.removeLast()]
            last.counts = [parent.counts.removeLast()]
            last.lows = [parent.lows.removeLast()]
            for branch in path { branch.counts[branch.counts.count - 1] -= last.total }
            child = last
        }
        let top = Node(isLeaf: false)
        top.children = [root, child]
        top.counts = [root.total, child.total]
        top.lows = [root.smallestKey, child.smallestKey]
        root = top
    }

    /// Adds `key`; false when the order holds it already.
    /// - Complexity: O(log n).
    @discardableResult
    func insert(_ key: [UInt8]) -> Bool {
        key.withUnsafeBytes { key in
            let (path, node, i, held) = search(key)
            if held { return false }
            node.insertKey(key, at: i)
            count += 1
            for (branch, child) in path {
                branch.counts[child] += 1
                // A key smaller than all a child held is its new smallest.
                if branch.lows[child].withUnsafeBytes({ key.compare(with: $0) < 0 }) { branch.lows[child] = Array(key) }
            }
            if node.keyCount > Self.leafCapacity { splitUp(path: path, node: node) }
            return true
        }
    }

    /// Takes `key` out; false when the order does not hold it.
    /// - Complexity: O(log n).
    @discardableResult
    func remove(_ key: [UInt8]) -> Bool {
        key.withUnsafeBytes { key in
            let (path, node, i, held) = search(key)
            guard held else { return false }
            node.removeKey(at: i)
            count -= 1
            for (branch, child) in path { branch.counts[child] -= 1 }
            // Empty nodes leave their parents; a branch's smallest keys follow its children's.
            var emptied = node.keyCount == 0
            for (branch, child) in path.reversed() {
                if emptied {
                    branch.children.remove(at: child)
                    branch.counts.remove(at: child)
                    branch.lows.remove(at: child)
                    emptied = branch.children.isEmpty
                } else if child < branch.lows.count {
                    branch.lows[child] = branch.children[child].smallestKey
                }
            }
            if emptied { root = Node(isLeaf: true) }
            // A root branch with one child gives way to it.
            while !root.isLeaf, root.children.count == 1 { root = root.children[0] }
            return true
        }
    }

    /// Splits `node`, then each full branch above it, on the way up `path`.
    private func splitUp(path: [(node: Node, child: Int)], node: Node) {
        var node = node
        for (branch, child) in path.reversed() {
            let full = node.isLeaf ? node.keyCount > Self.leafCapacity : node.children.count > Self.branchCapacity
            guard full else { return }
            let right = node.split()
            branch.counts[child] = node.total
            branch.children.insert(right, at: child + 1)
            branch.counts.insert(right.total, at: child + 1)
            branch.lows.insert(right.smallestKey, at: child + 1)
            node = branch
        }
        let full = node.isLeaf ? node.keyCount > Self.leafCapacity : node.children.count > Self.branchCapacity
        guard full else { return }
        // The root split: a new root above both halves.
        let right = node.split()
        let top = Node(isLeaf: false)
        top.children = [node, right]
        top.counts = [node.total, right.total]
        top.lows = [node.smallestKey, right.smallestKey]
        root = top
    }

    // MARK: Size

    /// The bytes the order holds, keys and structure, as the allocator counts them roughly:
    /// for the docs' per-match figure and for tests that bound it.
    var bytesHeld: Int {
        func size(_ node: Node) -> Int {
            let arrays = 3 * 32
            if node.isLeaf { return 48 + arrays + node.bytes.capacity + 4 * node.ends.capacity }
            return 48 + arrays + node.children.indices.reduce(0) { sum, i in
                sum + 8 + 8 + 32 + node.lows[i].capacity + size(node.children[i])
            }
        }
        return size(root)
    }
}
