import Foundation

/// Removes journal commits that retention no longer keeps, a bounded number per write so that
/// trimming never makes one commit slow; see ``JournalRetention`` for the rule.
struct JournalTrimmer {
    let core: StoreCore

    /// The first sequence retention keeps, given the newest sequence and the durable cursors.
    func retainedFrom(in txn: borrowing LMDBTransaction, firstSequence: UInt64, lastSequence: UInt64) throws -> UInt64 {
        let retention = core.retention
        var keepFrom = lastSequence > retention.minimumCommits ? lastSequence - retention.minimumCommits + 1 : 1
        // Soft rule: never past a durable cursor's position.
        if let slowest = try DurableCursors(core: core).slowestPosition(in: txn) {
            keepFrom = min(keepFrom, slowest + 1)
        }
        // Hard bounds, which may pass a cursor.
        if let maximum = retention.maximumCommits, lastSequence > maximum {
            keepFrom = max(keepFrom, lastSequence - maximum + 1)
        }
        if let maximumBytes = retention.maximumBytes, lastSequence >= firstSequence {
            // Drop the share of retained commits by which the journal exceeds its size
            // (page counts are O(1) to read; commits are assumed to be of similar size).
            let stats = try txn.statistics(core.system.journal)
            let bytes = stats.pages * stats.pageSize
            if bytes > maximumBytes {
                let retained = Double(lastSequence - firstSequence + 1)
                let excess = UInt64((retained * Double(bytes - maximumBytes) / Double(bytes)).rounded(.up))
                keepFrom = max(keepFrom, min(lastSequence, firstSequence + max(1, excess)))
            }
        }
        if let age = retention.maximumAge {
            let cutoff = Date().addingTimeInterval(-age)
            try txn.withCursor(core.system.commits) { cursor in
                var found = try cursor.first()
                var checked = 0
                while found, checked < 64 {
                    let sequence = try JournalKeys.sequence(from: cursor.key)
                    guard sequence < lastSequence,
                          try JournalKeys.decodeCommitHeader(cursor.value).timestamp < cutoff else { break }
                    keepFrom = max(keepFrom, sequence + 1)
                    checked += 1
                    found = try cursor.next()
                }
            }
        }
        return keepFrom
    }

    /// Trims at most `budgetCommits` of the oldest commits that retention lets go.
    func trim(in txn: borrowing LMDBTransaction, lastSequence: UInt64, budgetCommits: UInt64) throws {
        guard lastSequence > 0 else { return }
        let first = try MetaKey.decodeUInt64(try txn.get(core.system.meta, key: MetaKey.firstRetained), what: "first retained") ?? 1
        let keepFrom = try retainedFrom(in: txn, firstSequence: first, lastSequence: lastSequence)
        guard keepFrom > first else { return }
        let stop = keepFrom - first <= budgetCommits ? keepFrom : first + budgetCommits
        try txn.withCursor(core.system.journal) { cursor in
            var found = try cursor.first()
            while found, try JournalKeys.sequence(from: cursor.key) < stop {
                try cursor.deleteCurrent()
                found = try cursor.first()
            }
        }
        try txn.withCursor(core.system.commits) { cursor in
            var found = try cursor.first()
            while found, try JournalKeys.sequence(from: cursor.key) < stop {
                try cursor.deleteCurrent()
                found = try cursor.first()
            }
        }
        try txn.put(core.system.meta, key: MetaKey.firstRetained, value: MetaKey.encode(stop))
    }
}
