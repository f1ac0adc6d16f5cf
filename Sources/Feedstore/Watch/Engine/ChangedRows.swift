/// The positions stage: each changed record's place in the query's full order before and after
/// the span. New positions are counted ranks in the index; old ones are the new ones corrected
/// for the changed rows (the old index is the new one minus their new keys plus their old
/// keys), so the old snapshot is never read. Cost: O(k log n) for k changed records.
struct ChangedRows {
    struct Row {
        var change: ChangedRecord
        /// The key before, when it was in the query's range.
        var oldKey: [UInt8]?
        /// The key after, when it is in the query's range.
        var newKey: [UInt8]?
        /// Position in the old full order (nil: not a row before).
        var old: Int?
        /// Position in the new full order (nil: not a row after).
        var new: Int?

        var keyChanged: Bool { oldKey != newKey }
    }

    /// Changed records that were or are rows of the query, in no particular order.
    private(set) var rows: [Row] = []
    /// Rows of the query before and after the span.
    let oldCount: Int
    let newCount: Int
    /// The old and the new positions of the changed rows, ascending.
    let oldPositions: [Int]
    let newPositions: [Int]

    init(_ changes: [ChangedRecord], query: ReadTransaction.ResolvedQuery, reverse: Bool, in tx: ReadTransaction) throws {
        let range = query.keys
        func inRange(_ key: [UInt8]?) -> [UInt8]? {
            guard let key, key.withUnsafeBytes({ range.contains($0) }) else { return nil }
            return key
        }
        for change in changes {
            let old = inRange(change.oldKey), new = inRange(change.newKey)
            if old == nil && new == nil { continue }
            if old == new && change.isUnchanged { continue }
            rows.append(Row(change: change, oldKey: old, newKey: new))
        }
        let oldKeys = rows.compactMap(\.oldKey).sorted { $0.sortsBefore($1) }
        let newKeys = rows.compactMap(\.newKey).sorted { $0.sortsBefore($1) }
        newCount = query.count
        oldCount = newCount - newKeys.count + oldKeys.count
        func below(_ sorted: [[UInt8]], _ key: [UInt8]) -> Int {
            sorted.indices.partitionPoint { !sorted[$0].sortsBefore(key) }
        }
        for i in rows.indices {
            if let key = rows[i].newKey { rows[i].new = try query.position(ofKey: key, reverse: reverse, in: tx) }
            if let key = rows[i].oldKey {
                // The old order is the new one without the changed rows' new keys and with their old ones.
                let rank = try query.rank(ofKey: key, in: tx) - below(newKeys, key) + below(oldKeys, key)
                rows[i].old = query.position(ofRank: rank, reverse: reverse, rows: oldCount)
            }
        }
        oldPositions = rows.compactMap(\.old).sorted()
        newPositions = rows.compactMap(\.new).sorted()
    }
}
