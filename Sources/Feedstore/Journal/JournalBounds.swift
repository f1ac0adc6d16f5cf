/// The journal's retained range: commits `first...last` are readable (`first > last` when none).
public struct JournalBounds: Sendable, Hashable, Codable {
    /// The oldest retained sequence.
    public var first: UInt64
    /// The newest sequence (0 before the first commit).
    public var last: UInt64
}

extension SystemDatabases {
    /// The retained range as `txn` sees it. Nothing is written per commit to keep it: the newest
    /// sequence is that of the journal's last key (a commit's header sorts last), or, once every
    /// commit is trimmed, the one before the first retained.
    /// - Complexity: O(log n).
    func journalBounds(in txn: borrowing LMDBTransaction) throws -> JournalBounds {
        let first = try MetaKey.decodeUInt64(try txn.get(meta, key: MetaKey.firstRetained), what: "first retained") ?? 1
        let newest = try txn.withCursor(journal) { cursor in
            try cursor.last() ? try JournalKeys.sequence(from: cursor.key) : nil
        }
        return JournalBounds(first: first, last: newest ?? first - 1)
    }
}
