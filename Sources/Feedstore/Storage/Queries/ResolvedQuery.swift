extension ReadTransaction {
    /// A query's range resolved to keys, and the rank of its first entry: the one home of the
    /// arithmetic between a row's position in the range (read forward or in reverse), its rank
    /// in the index and its entry key. Code above Storage reaches the counted index only
    /// through it.
    struct ResolvedQuery {
        let entity: EntitySchema
        let index: IndexSchema
        let keys: KeyRange
        /// Entries before the range, and entries in it.
        let start: Int
        let count: Int

        /// The index rank of the row at `position` of the range read forward or in `reverse`;
        /// nil outside the range.
        func rank(ofPosition position: Int, reverse: Bool) -> Int? {
            guard position >= 0, position < count else { return nil }
            return reverse ? start + count - 1 - position : start + position
        }

        /// The position in the range, read forward or in `reverse`, of the entry of index rank
        /// `rank` (a rank inside the range); of a range of `rows` rows from the same start when
        /// given (the range as it was before changes that a watcher accounts for).
        func position(ofRank rank: Int, reverse: Bool, rows: Int? = nil) -> Int {
            reverse ? start + (rows ?? count) - 1 - rank : rank - start
        }

        /// The entry key of the row at `position`; nil outside the range.
        /// - Complexity: O(log n).
        func entryKey(at position: Int, reverse: Bool, in tx: ReadTransaction) throws -> [UInt8]? {
            guard let rank = rank(ofPosition: position, reverse: reverse) else { return nil }
            return try tx.accessCounts(of: index) { try $0.entry(at: rank, in: $1) }
        }

        /// Lends the entry key of the row at `position` to `body`; false outside the range.
        /// - Complexity: O(log n).
        func withEntryKey(at position: Int, reverse: Bool, in tx: ReadTransaction, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
            guard let rank = rank(ofPosition: position, reverse: reverse) else { return false }
            return try tx.accessCounts(of: index) { try $0.withEntry(at: rank, in: $1, body) }
        }

        /// The index rank of `key`: how many of the index's entries sort before it.
        /// - Complexity: O(log n).
        func rank(ofKey key: [UInt8], in tx: ReadTransaction) throws -> Int {
            try tx.accessCounts(of: index) { try $0.rank(of: key, in: $1) }
        }

        /// The position of the row whose entry key is `key` (a key inside the range).
        /// - Complexity: O(log n).
        func position(ofKey key: [UInt8], reverse: Bool, in tx: ReadTransaction) throws -> Int {
            position(ofRank: try rank(ofKey: key, in: tx), reverse: reverse)
        }

        /// How many rows of the range have an entry key that starts with `prefix`.
        /// - Complexity: O(log n).
        func count(withPrefix prefix: [UInt8], in tx: ReadTransaction) throws -> Int {
            var low: [UInt8]? = prefix
            if let lower = keys.lower, prefix.sortsBefore(lower) { low = lower }
            var high = KeyEncoding.successor(ofPrefix: prefix)
            if let upper = keys.upper, high.map({ upper.sortsBefore($0) }) ?? true { high = upper }
            let (a, b) = try tx.ranks(in: index, from: low, to: high)
            return Swift.max(0, b - a)
        }
    }

    /// The ranks in `index` of the keys `low` and `high`: where the entries from `low` up to
    /// `high` start and end (the index's first and last for nil).
    /// - Complexity: O(log n).
    func ranks(in index: IndexSchema, from low: [UInt8]?, to high: [UInt8]?) throws -> (start: Int, end: Int) {
        try accessCounts(of: index) { counted, txn in
            (try low.map { try counted.rank(of: $0, in: txn) } ?? 0, try high.map { try counted.rank(of: $0, in: txn) } ?? (try counted.total(in: txn)))
        }
    }
}
