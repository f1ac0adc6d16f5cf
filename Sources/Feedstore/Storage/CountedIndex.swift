/// Order statistics for one secondary index (`rank`, `entry(at:)`, range counts in O(log n)),
/// persisted beside it in LMDB and maintained in the writer's transaction, so every process sees
/// correct counts as soon as a commit is visible and nothing is rebuilt at open.
///
/// Structure: a counted B-tree of fence keys in one database (`counts:<entity>.<index>`). Level L
/// (1 through the height h) holds fence keys; a fence covers the index entries from its key up to
/// the next fence of its level, and stores how many there are. Every fence of level L+1 is also a
/// fence of level L and the empty key is a fence of every level, so a level-(L+1) fence's span is
/// exactly the spans of the level-L fences inside it (its children). Level-1 spans (buckets) hold
/// at most ``maximumBucket`` entries, other fences at most ``maximumChildren`` children: positions
/// are found by summing counts down the levels, then walking one bucket of index entries.
///
/// Keys in the counts database: `[L] + fence` → count (8 bytes) and children (4 bytes), plus
/// `[0xFF]` → height.
struct CountedIndex {
    /// The index's entries (key: components + primary key; value empty).
    let entries: LMDBDatabase
    /// The fence levels.
    let counts: LMDBDatabase

    static let maximumBucket = 64
    static let maximumChildren = 64
    static let heightKey: [UInt8] = [0xFF]

    struct Node: Equatable {
        var count: Int
        var children: Int

        var encoded: [UInt8] {
            var out = [UInt8](repeating: 0, count: 12)
            for i in 0..<8 { out[i] = UInt8(truncatingIfNeeded: UInt64(truncatingIfNeeded: count) >> (8 * i)) }
            for i in 0..<4 { out[8 + i] = UInt8(truncatingIfNeeded: UInt32(truncatingIfNeeded: children) >> (8 * i)) }
            return out
        }

        init(count: Int, children: Int) {
            self.count = count
            self.children = children
        }

        init(_ bytes: UnsafeRawBufferPointer) throws {
            guard bytes.count == 12 else {
                throw FeedstoreError.corruptData(what: "index counts", reason: "node of \(bytes.count) bytes, expected 12")
            }
            let c = UInt64(littleEndian: bytes.loadUnaligned(as: UInt64.self))
            guard c <= UInt64(Int.max) else { throw FeedstoreError.corruptData(what: "index counts", reason: "count overflow") }
            count = Int(c)
            children = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        }
    }

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

    /// How many entries sort strictly before `key` (a whole entry key or any prefix of one).
    /// - Complexity: O(log n): at most ``maximumChildren`` fences per level and one bucket.
    func rank(of key: [UInt8], in txn: borrowing LMDBTransaction) throws -> Int {
        let height = try height(in: txn)
        var rank = 0
        // The fence followed so far, with one leading byte for its level.
        var target: [UInt8] = [0]
        try txn.withCursor(counts) { cursor in
            for level in stride(from: height, through: 1, by: -1) {
                target[0] = UInt8(level)
                guard try cursor.seek(atOrAfter: target), cursor.key.compare(with: target) == 0 else {
                    throw missingFence(level, Array(target.dropFirst()))
                }
                var current = try Node(cursor.value)
                var moved = false
                // Step right while the next sibling's fence is still <= key. The height key
                // (0xFF) follows every level, so `next` never runs off the end here.
                while try cursor.next(), cursor.key.first == UInt8(level), cursor.key.compare(dropping: 1, with: key) <= 0 {
                    rank += current.count
                    current = try Node(cursor.value)
                    moved = true
                }
                if moved {
                    guard try cursor.previous() else { throw missingFence(level, key) }
                    target = Array(cursor.key)
                }
            }
        }
        try txn.withCursor(entries) { cursor in
            var found = try cursor.seek(atOrAfter: Array(target.dropFirst()))
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
        let height = try height(in: txn)
        var remaining = rank
        var target: [UInt8] = [0]
        try txn.withCursor(counts) { cursor in
            for level in stride(from: height, through: 1, by: -1) {
                target[0] = UInt8(level)
                guard try cursor.seek(atOrAfter: target), cursor.key.compare(with: target) == 0 else {
                    throw missingFence(level, Array(target.dropFirst()))
                }
                var current = try Node(cursor.value)
                var moved = false
                while remaining >= current.count {
                    remaining -= current.count
                    guard try cursor.next(), cursor.key.first == UInt8(level) else {
                        throw FeedstoreError.corruptData(what: "index counts", reason: "level \(level) counts less than the index holds")
                    }
                    current = try Node(cursor.value)
                    moved = true
                }
                if moved { target = Array(cursor.key) }
            }
        }
        return try txn.withCursor(entries) { cursor in
            var found = try cursor.seek(atOrAfter: Array(target.dropFirst()))
            while found, remaining > 0 {
                remaining -= 1
                found = try cursor.next()
            }
            guard found else { throw FeedstoreError.corruptData(what: "index counts", reason: "bucket holds fewer entries than counted") }
            return Array(cursor.key)
        }
    }

    func missingFence(_ level: Int, _ fence: [UInt8]) -> FeedstoreError {
        .corruptData(what: "index counts", reason: "level \(level) lacks fence \(fence.count) bytes long")
    }
}
