extension ReadTransaction {
    /// A query's range resolved to keys, and the rank of its first entry: the one home of the
    /// arithmetic between a row's position in the range (read forward or in reverse), its rank
    /// in the index and its entry key. Code above Storage reaches the counted index only
    /// through it. A filtered query's rows are the range's entries that pass its filter, and
    /// its ranks count them in their ``FilteredOrder``, which answers what the counted index
    /// answers for a plain range. A class, immutable: a read finds it in the transaction's cache
    /// and holds it by one reference, not by a copy of its schema's arrays.
    final class ResolvedQuery {
        let entity: EntitySchema
        let index: IndexSchema
        let keys: KeyRange
        /// Entries before the range, and entries in it (for a filtered query: 0, and its matches).
        let start: Int
        let count: Int
        /// A filtered query's filter and the entries that pass it; nil for a plain range.
        let filtered: FilteredRows?

        /// A filter and the entries of a range that pass it.
        final class FilteredRows {
            let filter: RecordFilter
            let order: FilteredOrder

            init(filter: RecordFilter, order: FilteredOrder) {
                self.filter = filter
                self.order = order
            }
        }

        var filter: RecordFilter? { filtered?.filter }
        var order: FilteredOrder? { filtered?.order }

        init(entity: EntitySchema, index: IndexSchema, keys: KeyRange, start: Int, count: Int) {
            self.entity = entity
            self.index = index
            self.keys = keys
            self.start = start
            self.count = count
            filtered = nil
        }

        /// This range's entries that pass `filter`, which `order` holds.
        func filtered(by filter: RecordFilter, order: FilteredOrder) -> ResolvedQuery {
            ResolvedQuery(entity: entity, index: index, keys: keys, filtered: FilteredRows(filter: filter, order: order))
        }

        private init(entity: EntitySchema, index: IndexSchema, keys: KeyRange, filtered: FilteredRows) {
            self.entity = entity
            self.index = index
            self.keys = keys
            start = 0
            count = filtered.order.count
            self.filtered = filtered
        }

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
            if let order { return order.key(at: rank) }
            return try tx.accessCounts(of: index) { try $0.entry(at: rank, in: $1) }
        }

        /// Lends the entry key of the row at `position` to `body`; false outside the range.
        /// - Complexity: O(log n).
        func withEntryKey(at position: Int, reverse: Bool, in tx: ReadTransaction, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> Bool {
            guard let rank = rank(ofPosition: position, reverse: reverse) else { return false }
            if let order {
                guard let key = order.key(at: rank) else { return false }
                try key.withUnsafeBytes(body)
                return true
            }
            return try tx.accessCounts(of: index) { try $0.withEntry(at: rank, in: $1, body) }
        }

        /// The index rank of `key`: how many of the index's entries sort before it.
        /// - Complexity: O(log n).
        func rank(ofKey key: [UInt8], in tx: ReadTransaction) throws -> Int {
            if let order { return order.rank(of: key) }
            return try tx.accessCounts(of: index) { try $0.rank(of: key, in: $1) }
        }

        /// Whether the row whose entry key is `key` is in the query: in the range, and in a
        /// filtered query's order.
        func holds(key: [UInt8]) -> Bool {
            key.withUnsafeBytes { keys.contains($0) } && (order?.contains(key) ?? true)
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
            if let order { return Swift.max(0, (high.map(order.rank(of:)) ?? order.count) - (low.map(order.rank(of:)) ?? 0)) }
            let (a, b) = try tx.ranks(in: index, from: low, to: high)
            return Swift.max(0, b - a)
        }

        /// The rows from `offset`, at most `limit` of them, as ``rowKeys(entity:index:range:reverse:offset:limit:filter:)`` reads them.
        /// - Complexity: O(log n + k) for k rows.
        func rowKeys(offset: Int, limit: Int?, reverse: Bool, in tx: ReadTransaction) throws -> [RowKey] {
            var keys: [RowKey] = []
            try tx.walkKeys(of: self, reverse: reverse, offset: offset, limit: limit) { key, _ in keys.append(try RowKey(entryKey: key)) }
            return keys
        }

        /// The rows at `positions` (in any order).
        /// - Complexity: O(r log n + k) for k positions in r runs of consecutive ones.
        func rowKeys(at positions: [Int], reverse: Bool, in tx: ReadTransaction) throws -> [RowKey] {
            var ids = [RowKey](repeating: .none, count: positions.count)
            let sorted = positions.indices.sorted { positions[$0] < positions[$1] }
            var i = 0
            while i < sorted.count {
                var j = i + 1
                while j < sorted.count, positions[sorted[j]] == positions[sorted[j - 1]] + 1 { j += 1 }
                let run = try rowKeys(offset: positions[sorted[i]], limit: j - i, reverse: reverse, in: tx)
                guard run.count == j - i else {
                    throw FeedstoreError.corruptData(what: "index \(entity.name).\(index.definition.name)", reason: "fewer entries than its counts say")
                }
                for (k, id) in run.enumerated() { ids[sorted[i + k]] = id }
                i = j
            }
            return ids
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
