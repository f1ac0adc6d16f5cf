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
/// reads one node per level and searches it in memory, then walks part of one bucket of entries.
struct CountedIndex {
    /// The index's entries (key: components + primary key; value empty).
    let entries: LMDBDatabase
    /// The tree's nodes.
    let counts: LMDBDatabase
    /// Node and bucket sizes (small ones in tests, to grow deep trees from few entries).
    var limits = Limits.standard
    /// Nodes kept by a read transaction across its reads (nil in a write transaction, whose
    /// nodes change).
    var nodes: CountNodeCache? = nil

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
        try root(in: txn).height
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

    /// Where a walk from the root ended: a bucket, its size, and the fence that ends it. The
    /// fences are borrowed from the tree's nodes, valid inside the walk's `body`.
    struct Bucket {
        var fence: UnsafeRawBufferPointer
        /// The next bucket's fence, or nil for the last bucket.
        var end: UnsafeRawBufferPointer?
        var size: Int
    }

    /// Walks from the root to a bucket, reading one node per level (from ``nodes`` when kept
    /// there), and lends the bucket to `body`. `choose` is shown each node and picks a child.
    /// (Not generic: the positional reads that call it come from generic code, where a generic
    /// result would cost type lookups on every call.)
    func descend(in txn: borrowing LMDBTransaction, _ choose: (_ level: Int, _ node: CountNodeView) throws -> Int,
                 then body: (Bucket) throws -> Void) throws
    {
        var (level, bytes) = try root(in: txn)
        // Node bytes stay valid for the transaction, so the fence that ends the bucket (the
        // nearest following sibling on the way down) is kept as borrowed bytes.
        var end: UnsafeRawBufferPointer?
        while true {
            let node = try CountNodeView(bytes)
            let child = try choose(level, node)
            if child + 1 < node.count { end = node.fenceBytes(child + 1) }
            let fence = node.fenceBytes(child)
            if level == 1 { return try body(Bucket(fence: fence, end: end, size: node.entries(child))) }
            level -= 1
            bytes = try self.node(level, fence, in: txn)
        }
    }

    /// The tree's height and root node.
    private func root(in txn: borrowing LMDBTransaction) throws -> (height: Int, node: UnsafeRawBufferPointer) {
        if let kept = nodes?.root(of: counts) { return kept }
        func corrupt(_ reason: String) -> FeedstoreError { .corruptData(what: "index counts", reason: reason) }
        let height = try Self.heightKey.withUnsafeBytes { key in
            guard let value = try txn.borrowedValue(counts, key: key) else { throw corrupt("the height is missing") }
            guard value.count == 1, value[0] >= 1, value[0] < 0xFF else { throw corrupt("bad height") }
            return Int(value[0])
        }
        let root = try withUnsafeBytes(of: UInt8(height)) { key in
            guard let value = try txn.borrowedValue(counts, key: key) else { throw Self.missingNode(height, 0) }
            return value
        }
        nodes?.keepRoot(root, height: height, of: counts)
        return (height, root)
    }

    /// The node at `level` named by `fence` (borrowed from its parent node).
    private func node(_ level: Int, _ fence: UnsafeRawBufferPointer, in txn: borrowing LMDBTransaction) throws -> UnsafeRawBufferPointer {
        if let kept = nodes?.node(for: fence) { return kept }
        // Its key, `[level] + fence`, built on the stack (LMDB keys are at most 511 bytes).
        let bytes = try withUnsafeTemporaryAllocation(byteCount: 512, alignment: 1) { key in
            guard fence.count < key.count else { throw Self.missingNode(level, fence.count) }
            key[0] = UInt8(level)
            UnsafeMutableRawBufferPointer(rebasing: key[1...]).copyMemory(from: fence)
            guard let value = try txn.borrowedValue(counts, key: UnsafeRawBufferPointer(rebasing: key[..<(fence.count + 1)])) else {
                throw Self.missingNode(level, fence.count)
            }
            return value
        }
        nodes?.keep(bytes, for: fence)
        return bytes
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
    /// - Complexity: O(log n): one node per level and part of a bucket.
    func rank(of key: [UInt8], in txn: borrowing LMDBTransaction) throws -> Int {
        var before = 0
        try descend(in: txn, { _, node in
            let i = node.child(containing: key)
            before += node.sum(before: i)
            return i
        }, then: { bucket in try txn.withCursor(entries) { cursor in
            if let end = bucket.end, Self.estimatedPosition(of: key, from: bucket.fence, to: end) > 0.5 {
                // Likely nearer the bucket's end: count the entries from `key` to it instead.
                var after = 0
                var found = try cursor.seek(atOrAfter: key)
                while found, cursor.key.compare(with: end) < 0 {
                    after += 1
                    found = try cursor.next()
                }
                before += bucket.size - after
                return
            }
            var found = try cursor.seek(atOrAfter: bucket.fence)
            while found, cursor.key.compare(with: key) < 0 {
                before += 1
                found = try cursor.next()
            }
        } })
        return before
    }

    /// Where `key` likely falls between two fences, from 0 to 1, reading the first eight bytes
    /// after their common prefix as numbers. Only chooses a walk's direction.
    static func estimatedPosition(of key: [UInt8], from low: UnsafeRawBufferPointer, to high: UnsafeRawBufferPointer) -> Double {
        var shared = 0
        while shared < low.count, shared < high.count, low[shared] == high[shared] { shared += 1 }
        func number<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Double where Bytes.Index == Int {
            var n: UInt64 = 0
            for i in shared..<(shared + 8) { n = n << 8 | UInt64(i < bytes.count ? bytes[i] : 0) }
            return Double(n)
        }
        let l = number(low), h = number(high)
        return h > l ? (number(key) - l) / (h - l) : 0
    }

    /// The key of the entry at position `rank` in index order, or nil past the end.
    /// - Complexity: O(log n): one node per level and at most half a bucket.
    func entry(at rank: Int, in txn: borrowing LMDBTransaction) throws -> [UInt8]? {
        var key: [UInt8]?
        try withEntry(at: rank, in: txn) { key = Array($0) }
        return key
    }

    /// Lends the key of the entry at position `rank` to `body` (borrowed from the index, so a
    /// caller reading the record it names copies nothing); false past the end.
    /// - Complexity: O(log n): one node per level and at most half a bucket.
    @discardableResult
    func withEntry(at rank: Int, in txn: borrowing LMDBTransaction, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
        guard rank >= 0, rank < (try total(in: txn)) else { return false }
        var offset = rank
        try descend(in: txn, { _, node in
            var i = 0
            while i < node.count - 1, offset >= node.entries(i) {
                offset -= node.entries(i)
                i += 1
            }
            return i
        }, then: { bucket in try txn.withCursor(entries) { cursor in
            var found: Bool
            let fromEnd = bucket.size - 1 - offset
            if fromEnd >= 0, fromEnd < offset {
                // Nearer the bucket's end: step back from the first entry after it.
                found = try bucket.end.map { try cursor.seek(atOrAfter: $0) } ?? false
                found = found ? try cursor.previous() : try cursor.last()
                // On the same leaf page, the entry is read there; else the cursor steps.
                if found, fromEnd > 0, let key = cursor.key(offsetBy: -fromEnd) { return try body(key) }
                for _ in 0..<fromEnd where found { found = try cursor.previous() }
            } else {
                found = try cursor.seek(atOrAfter: bucket.fence)
                if found, offset > 0, let key = cursor.key(offsetBy: offset) { return try body(key) }
                for _ in 0..<offset where found { found = try cursor.next() }
            }
            guard found else { throw FeedstoreError.corruptData(what: "index counts", reason: "bucket holds fewer entries than counted") }
            try body(cursor.key)
        } })
        return true
    }
}

extension IndexSchema {
    /// The index's order statistics.
    var counted: CountedIndex { CountedIndex(entries: database, counts: counts) }
}
