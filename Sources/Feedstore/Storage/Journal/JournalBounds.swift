/// The journal's retained range: commits `first...last` are readable (`first > last` when none).
public struct JournalBounds: Sendable, Hashable, Codable {
    /// The oldest retained sequence.
    public var first: UInt64
    /// The newest sequence (0 before the first commit).
    public var last: UInt64
}

/// Nothing is written per commit to keep the bounds: the newest sequence is that of the
/// journal's last key (a commit's header sorts last), or, once every commit is trimmed, the one
/// before the first retained.
extension SystemDatabases {
    /// The retained range as `txn` sees it.
    /// - Complexity: O(log n).
    func journalBounds(in txn: borrowing LMDBTransaction) throws -> JournalBounds {
        let first = try firstRetained(in: txn)
        return JournalBounds(first: first, last: try lastKeySequence(in: txn) ?? first - 1)
    }

    /// The newest sequence, which is all a writer and the commit monitor need.
    /// - Complexity: O(log n).
    func newestSequence(in txn: borrowing LMDBTransaction) throws -> UInt64 {
        if let last = try lastKeySequence(in: txn) { return last }
        return try firstRetained(in: txn) - 1
    }

    func firstRetained(in txn: borrowing LMDBTransaction) throws -> UInt64 {
        try MetaKey.decodeUInt64(try txn.get(meta, key: MetaKey.firstRetained), what: "first retained") ?? 1
    }

    private func lastKeySequence(in txn: borrowing LMDBTransaction) throws -> UInt64? {
        try txn.withCursor(journal) { cursor in try cursor.last() ? try JournalKeys.sequence(from: cursor.key) : nil }
    }
}
