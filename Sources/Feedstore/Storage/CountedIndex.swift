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
        guard let bytes = try txn.get(counts, key: Self.heightKey) else {
            throw FeedstoreError.corruptData(what: "index counts", reason: "the height is missing")
        }
        guard bytes.count == 1, bytes[0] >= 1, bytes[0] < 0xFF else {
            throw FeedstoreError.corruptData(what: "index counts", reason: "bad height")
        }
        return Int(bytes[0])
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
            throw FeedstoreError.corruptData(what: "index counts", reason: "level \(level) lacks a node of fence \(fence.count) bytes")
        }
        return result
    }

    /// How many entries sort strictly before `key` (a whole entry key or any prefix of one).
    /// - Complexity: O(log n): one node per level and one bucket.
    func rank(of key: [UInt8], in txn: borrowing LMDBTransaction) throws -> Int {
        var rank = 0
        var fence: [UInt8] = []
        for level in stride(from: try height(in: txn), through: 1, by: -1) {
            fence = try withNode(level, fence, in: txn) { node in
                let i = node.child(containing: key)
                rank += node.sum(before: i)
                return node.fence(i)
            }
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
        var fence: [UInt8] = []
        for level in stride(from: try height(in: txn), through: 1, by: -1) {
            fence = try withNode(level, fence, in: txn) { node in
                var i = 0
                while i < node.count - 1, remaining >= node.entries(i) {
                    remaining -= node.entries(i)
                    i += 1
                }
                return node.fence(i)
            }
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
