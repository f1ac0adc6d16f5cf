/// Order statistics for one secondary index (`rank`, `entry(at:)`, range counts in O(log n)),
/// persisted beside it in LMDB and maintained in the writer's transaction, so every process sees
/// correct counts as soon as a commit is visible and nothing is rebuilt at open.
///
/// Structure: a counted B+tree over the index's entries, in one database
/// (`counts:<entity>.<index>`). Its leaves are *buckets*: runs of consecutive index entries
/// (at most ``Limits/maximumBucket``), each named by a fence key that separates it from the previous
/// bucket. Each internal node is one LMDB value, keyed by `[level] + fence` (its own fence is
/// its first child's): the fences and entry counts of its children, level-1 nodes' children
/// being buckets. The root is `[height] + ""`; `[0xFF]` holds the height. Finding a position
/// reads one node per level and searches it in memory, then walks one bucket of entries.
struct CountedIndex {
    /// The index's entries (key: components + primary key; value empty).
    let entries: LMDBDatabase
    /// The tree's nodes.
    let counts: LMDBDatabase
    /// Node and bucket sizes (small ones in tests, to grow deep trees from few entries).
    var limits = Limits.standard

    struct Limits {
        /// Largest bucket before it splits.
        var maximumBucket: Int
        /// Largest number of children of a node before it splits.
        var maximumChildren: Int
        /// Largest node (key and value) before it splits, so that nodes stay inline in LMDB
        /// pages (LMDB moves values over about 2 KB to overflow pages, which every update copies).
        var maximumNodeBytes: Int

        static let standard = Limits(maximumBucket: 64, maximumChildren: 64, maximumNodeBytes: 1_900)
    }

    static let heightKey: [UInt8] = [0xFF]

    static func nodeKey(_ level: Int, _ fence: [UInt8]) -> [UInt8] { [UInt8(level)] + fence }

    // MARK: Reading

    func height(in txn: borrowing LMDBTransaction) throws -> Int {
        try txn.withCursor(counts) { try Self.positionAtRoot($0) }
    }

    /// The number of entries in the index.
    /// - Complexity: O(1).
    func total(in txn: borrowing LMDBTransaction) throws -> Int {
        try txn.statistics(entries).entries
    }

    /// Reads the node at `level` with `fence` and lends it to `body`.
    func withNode<R>(_ level: Int, _ fence: [UInt8], in txn: borrowing LMDBTransaction,
                     _ body: (CountNodeView) throws -> R) throws -> R
    {
        guard let result = try txn.withValue(counts, key: Self.nodeKey(level, fence), { try body(try CountNodeView($0)) }) else {
            throw Self.missingNode(level, fence.count)
        }
        return result
    }

    static func missingNode(_ level: Int, _ fenceBytes: Int) -> FeedstoreError {
        .corruptData(what: "index counts", reason: "level \(level) lacks a node of fence \(fenceBytes) bytes")
    }

    /// Walks from the root to a bucket with one cursor on the tree, reading one node per level.
    /// `choose` is shown each node (with a cursor resting on it) and picks a child. Returns the
    /// chosen bucket's fence.
    func descend(in txn: borrowing LMDBTransaction,
                 _ choose: (_ level: Int, _ node: CountNodeView, _ cursor: borrowing LMDBCursor) throws -> Int) throws -> [UInt8]
    {
        try txn.withCursor(counts) { cursor in
            var level = try Self.positionAtRoot(cursor)
            var key: [UInt8] = []
            key.reserveCapacity(32)
            while true {
                let node = try CountNodeView(cursor.value)
                // `choose` may patch a count in place; the fences it leaves as they were.
                let fence = node.fenceBytes(try choose(level, node, cursor))
                if level == 1 { return Array(fence) }
                level -= 1
                key.removeAll(keepingCapacity: true)
                key.append(UInt8(level))
                key.append(contentsOf: fence)
                guard try cursor.seek(exactly: key) else { throw Self.missingNode(level, fence.count) }
            }
        }
    }

    /// Rests `cursor` (on ``counts``) on the root and returns the height. The root's key
    /// `[height]` is the last one before the height's own `[0xFF]`, so no search by key is needed.
    static func positionAtRoot(_ cursor: borrowing LMDBCursor) throws -> Int {
        func corrupt(_ reason: String) -> FeedstoreError { .corruptData(what: "index counts", reason: reason) }
        guard try cursor.last(), cursor.key.count == 1, cursor.key[0] == heightKey[0] else { throw corrupt("the height is missing") }
        guard cursor.value.count == 1, cursor.value[0] >= 1, cursor.value[0] < 0xFF else { throw corrupt("bad height") }
        let height = Int(cursor.value[0])
        guard try cursor.previous(), cursor.key.count == 1, cursor.key[0] == height else { throw missingNode(height, 0) }
        return height
    }

    /// How many entries sort strictly before `key` (a whole entry key or any prefix of one).
    /// - Complexity: O(log n): one node per level and one bucket.
    func rank(of key: [UInt8], in txn: borrowing LMDBTransaction) throws -> Int {
        var rank = 0
        let fence = try descend(in: txn) { _, node, _ in
            let i = node.child(containing: key)
            rank += node.sum(before: i)
            return i
        }
        try txn.withCursor(entries) { cursor in
            var found = try cursor.seek(atOrAfter: fence)
            while found, cursor.key.compare(with: key) < 0 {
                rank += 1
                found = try cursor.next()
            }
        }
        return rank
    }

    /// The key of the entry at position `rank` in index order, or nil past the end.
    /// - Complexity: O(log n).
    func entry(at rank: Int, in txn: borrowing LMDBTransaction) throws -> [UInt8]? {
        guard rank >= 0, rank < (try total(in: txn)) else { return nil }
        var remaining = rank
        let fence = try descend(in: txn) { _, node, _ in
            var i = 0
            while i < node.count - 1, remaining >= node.entries(i) {
                remaining -= node.entries(i)
                i += 1
            }
            return i
        }
        return try txn.withCursor(entries) { cursor in
            var found = try cursor.seek(atOrAfter: fence)
            while found, remaining > 0 {
                remaining -= 1
                found = try cursor.next()
            }
            guard found else { throw FeedstoreError.corruptData(what: "index counts", reason: "bucket holds fewer entries than counted") }
            return Array(cursor.key)
        }
    }
}
