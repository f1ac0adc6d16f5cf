/// The journal's retained range: commits `first...last` are readable (`first > last` when none).
public struct JournalBounds: Sendable, Hashable, Codable {
    /// The oldest retained sequence.
    public var first: UInt64
    /// The newest sequence (0 before the first commit).
    public var last: UInt64
}

extension ReadTransaction {
    /// The retained range of the journal as of this transaction.
    /// - Complexity: O(1).
    public func journalBounds() throws -> JournalBounds {
        try access { txn in
            let last = try MetaKey.decodeUInt64(try txn.get(core.system.meta, key: MetaKey.lastSequence), what: "last sequence") ?? 0
            let first = try MetaKey.decodeUInt64(try txn.get(core.system.meta, key: MetaKey.firstRetained), what: "first retained") ?? 1
            return JournalBounds(first: first, last: last)
        }
    }

    /// The commits after `sequence`, oldest first, at most `limit` of them (commits are never split).
    /// - Throws: ``FeedstoreError/journalBehindRetention(requested:firstRetained:)`` when commits
    ///   after `sequence` were already trimmed: the reader must start again from current state.
    /// - Complexity: O(log n + e) for e entries returned.
    public func journal(after sequence: UInt64, limit: Int = 100) throws -> [JournalCommit] {
        let bounds = try journalBounds()
        if sequence < bounds.last, sequence + 1 < bounds.first {
            throw FeedstoreError.journalBehindRetention(requested: sequence, firstRetained: bounds.first)
        }
        guard limit > 0, sequence < bounds.last else { return [] }
        let catalog = schema.catalog
        var commits: [JournalCommit] = []
        var current: JournalCommit?
        try access { txn in
            try txn.withCursor(core.system.journal) { cursor in
                var found = try cursor.seek(atOrAfter: JournalKeys.sequenceKey(sequence + 1))
                while found {
                    let seq = try JournalKeys.sequence(from: cursor.key)
                    if current?.sequence != seq {
                        if let done = current { commits.append(done) }
                        if commits.count == limit { current = nil; return }
                        let header = try txn.withValue(core.system.commits, key: JournalKeys.sequenceKey(seq)) {
                            try JournalKeys.decodeCommitHeader($0)
                        }
                        guard let header else {
                            throw FeedstoreError.corruptData(what: "journal", reason: "commit \(seq) has entries but no header")
                        }
                        current = JournalCommit(sequence: seq, timestamp: header.timestamp, entries: [])
                    }
                    let record = try JournalRecord.decode(cursor.value)
                    current!.entries.append(try record.resolved(sequence: seq, catalog: catalog))
                    found = try cursor.next()
                }
            }
        }
        if let last = current { commits.append(last) }
        return commits
    }

    /// The named durable cursors and the sequence each has acknowledged.
    public func journalCursors() throws -> [(name: String, position: UInt64)] {
        try access { try DurableCursors(core: core).all(in: $0) }
    }
}
