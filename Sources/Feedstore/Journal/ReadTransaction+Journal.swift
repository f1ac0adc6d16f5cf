extension ReadTransaction {
    /// The retained range of the journal as of this transaction.
    /// - Complexity: O(log n) for n retained entries (two lookups).
    public func journalBounds() throws -> JournalBounds {
        try access { try core.system.journalBounds(in: $0) }
    }

    /// The newest commit's sequence as of this transaction (0 before the first commit).
    /// - Complexity: O(log n), one lookup.
    func newestSequence() throws -> UInt64 {
        try access { try core.system.newestSequence(in: $0) }
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
        var entries: [JournalEntry] = []
        try access { txn in
            try txn.withCursor(core.system.journal) { cursor in
                var found = try cursor.seek(atOrAfter: JournalKeys.sequenceKey(sequence + 1))
                while found {
                    let seq = try JournalKeys.sequence(from: cursor.key)
                    if let open = entries.first, open.sequence != seq {
                        throw FeedstoreError.corruptData(what: "journal", reason: "commit \(open.sequence) has entries but no header")
                    }
                    if try JournalKeys.isHeader(cursor.key) {
                        // A commit's entries come before its header.
                        let header = try JournalKeys.decodeCommitHeader(cursor.value)
                        guard header.entries == entries.count else {
                            throw FeedstoreError.corruptData(what: "journal", reason: "commit \(seq) has \(entries.count) entries; its header says \(header.entries)")
                        }
                        commits.append(JournalCommit(sequence: seq, timestamp: header.timestamp, entries: entries))
                        entries = []
                        if commits.count == limit { return }
                    } else {
                        entries.append(try JournalRecord.decode(cursor.value).resolved(sequence: seq, catalog: catalog))
                    }
                    found = try cursor.next()
                }
            }
        }
        if let orphan = entries.first {
            throw FeedstoreError.corruptData(what: "journal", reason: "commit \(orphan.sequence) has entries but no header")
        }
        return commits
    }

    /// The newest `limit` commits, newest first.
    /// - Complexity: O(log n + e) for e entries returned: the walk back from the journal's end
    ///   passes the entries of the commits it returns.
    public func journal(newest limit: Int) throws -> [JournalCommit] {
        guard limit > 0 else { return [] }
        var oldest: UInt64?
        try access { txn in
            try txn.withCursor(core.system.journal) { cursor in
                var headers = 0
                var found = try cursor.last()
                while found {
                    if try JournalKeys.isHeader(cursor.key) {
                        oldest = try JournalKeys.sequence(from: cursor.key)
                        headers += 1
                        if headers == limit { return }
                    }
                    found = try cursor.previous()
                }
            }
        }
        guard let oldest else { return [] }
        return try journal(after: oldest - 1, limit: limit).reversed()
    }

    /// The named durable cursors and the sequence each has acknowledged.
    public func journalCursors() throws -> [(name: String, position: UInt64)] {
        try access { try DurableCursors(core: core).all(in: $0) }
    }
}
