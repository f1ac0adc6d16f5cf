import Foundation

extension ReadTransaction {
    /// The newest commit's sequence as of this transaction (0 before the first commit).
    /// - Complexity: O(log n), one lookup.
    func newestSequence() throws -> UInt64 {
        try access { try core.system.newestSequence(in: $0) }
    }

    /// The journal's bounds, when the commits after `sequence` are all retained.
    /// - Throws: ``FeedstoreError/journalBehindRetention(requested:firstRetained:)`` otherwise.
    private func retainedBounds(after sequence: UInt64) throws -> JournalBounds {
        let bounds = try journalBounds()
        if sequence < bounds.last, sequence + 1 < bounds.first {
            throw FeedstoreError.journalBehindRetention(requested: sequence, firstRetained: bounds.first)
        }
        return bounds
    }

    /// The commits after `sequence`, oldest first, at most `limit` of them (commits are never split).
    /// - Throws: ``FeedstoreError/journalBehindRetention(requested:firstRetained:)`` when commits
    ///   after `sequence` were already trimmed: the reader must start again from current state.
    /// - Complexity: O(log n + e) for e entries returned.
    public func journal(after sequence: UInt64, limit: Int = 100) throws -> [JournalCommit] {
        let bounds = try retainedBounds(after: sequence)
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
                        entries.append(try journalEntry(cursor.value, sequence: seq, catalog: catalog))
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

    /// Walks the entries of the commits after `sequence`, oldest first, lending each with its
    /// commit's time to `body`, which returns false to stop. Unlike
    /// ``journal(after:limit:)`` it holds one entry at a time, however large the commits.
    /// - Returns: the sequence of the last commit walked to its end (`sequence` when none was).
    /// - Throws: ``FeedstoreError/journalBehindRetention(requested:firstRetained:)`` as
    ///   ``journal(after:limit:)`` does; ``FeedstoreError/corruptData(what:reason:)`` when a
    ///   commit's entries and header disagree.
    /// - Complexity: O(log n) per commit and O(1) per entry.
    @discardableResult
    public func forEachJournalEntry(after sequence: UInt64, _ body: (_ entry: JournalEntry, _ time: Date) throws -> Bool) throws -> UInt64 {
        guard sequence < (try retainedBounds(after: sequence)).last else { return sequence }
        let catalog = schema.catalog
        var finished = sequence
        try access { txn in
            try txn.withCursor(core.system.journal) { cursor in
                // The commit being walked: its sequence, time and entries (from its header, which
                // sorts after them and is read first), and the entries met so far.
                var open: (sequence: UInt64, time: Date, entries: Int, met: Int)?
                var found = try cursor.seek(atOrAfter: JournalKeys.sequenceKey(sequence + 1))
                while found {
                    let seq = try JournalKeys.sequence(from: cursor.key)
                    if try JournalKeys.isHeader(cursor.key) {
                        guard let commit = open, commit.sequence == seq, commit.met == commit.entries else {
                            let met = open?.sequence == seq ? open!.met : 0
                            let header = try JournalKeys.decodeCommitHeader(cursor.value)
                            throw FeedstoreError.corruptData(what: "journal", reason: "commit \(seq) has \(met) entries; its header says \(header.entries)")
                        }
                        finished = seq
                        open = nil
                    } else {
                        if open?.sequence != seq {
                            if let unfinished = open {
                                throw FeedstoreError.corruptData(what: "journal", reason: "commit \(unfinished.sequence) has entries but no header")
                            }
                            guard let header = try txn.withValue(core.system.journal, key: JournalKeys.headerKey(seq), { try JournalKeys.decodeCommitHeader($0) }) else {
                                throw FeedstoreError.corruptData(what: "journal", reason: "commit \(seq) has entries but no header")
                            }
                            open = (seq, header.timestamp, header.entries, 0)
                        }
                        open!.met += 1
                        let entry = try journalEntry(cursor.value, sequence: seq, catalog: catalog)
                        guard try body(entry, open!.time) else { return }
                    }
                    found = try cursor.next()
                }
            }
        }
        return finished
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

    /// A stored journal entry named through the catalog, with the record after the change when
    /// the entry carries it.
    private func journalEntry(_ bytes: UnsafeRawBufferPointer, sequence: UInt64, catalog: Catalog) throws -> JournalEntry {
        let stored = try JournalRecord.decode(bytes)
        var entry = try stored.resolved(sequence: sequence, catalog: catalog)
        if let image = stored.record, catalog.entities[entry.entity] != nil {
            var entity = try entity(entry.entity)
            entry.record = try image.withUnsafeBytes { try decodeFields($0, of: &entity, id: entry.id) }
        }
        return entry
    }
}
