import Foundation

/// Removes journal commits that retention no longer keeps, a bounded number of keys per write so
/// that trimming never makes one commit slow; see ``JournalRetention`` for the rule.
struct JournalTrimmer {
    let core: StoreCore

    /// The first sequence retention keeps, given the newest sequence and the durable cursors, and
    /// whether a hard bound moved it past what the soft rule keeps. While trimmed commits' keys
    /// wait to be removed, their pages still count in the journal's size: the size bound then
    /// waits too, rather than trimming retained commits for pages they do not hold.
    func retainedFrom(in txn: borrowing LMDBTransaction, firstSequence: UInt64, lastSequence: UInt64,
                      removalPending: Bool) throws -> (sequence: UInt64, forced: Bool)
    {
        let retention = core.retention
        var keepFrom = lastSequence > retention.minimumCommits ? lastSequence - retention.minimumCommits + 1 : 1
        // Soft rule: never past a durable cursor's position.
        if let slowest = try DurableCursors(core: core).slowestPosition(in: txn) {
            keepFrom = min(keepFrom, slowest + 1)
        }
        let soft = keepFrom
        // Hard bounds, which may pass a cursor.
        if let maximum = retention.maximumCommits, lastSequence > maximum {
            keepFrom = max(keepFrom, lastSequence - maximum + 1)
        }
        if let maximumBytes = retention.maximumBytes, lastSequence >= firstSequence, !removalPending {
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
            try txn.withCursor(core.system.journal) { cursor in
                var sequence = firstSequence
                var checked = 0
                while sequence < lastSequence, checked < 64, try cursor.seek(exactly: JournalKeys.headerKey(sequence)),
                      try JournalKeys.decodeCommitHeader(cursor.value).timestamp < cutoff
                {
                    keepFrom = max(keepFrom, sequence + 1)
                    sequence += 1
                    checked += 1
                }
            }
        }
        return (keepFrom, keepFrom > soft)
    }

    /// Commits that only the soft rule lets go are trimmed once at least this many may go, so
    /// that most commits write only the journal's newest pages, not also its oldest ones (about
    /// a quarter of a small commit's pages). Hard bounds trim as soon as they are passed.
    static let softTrimRun: UInt64 = 16

    /// Journal keys of trimmed commits that writes remove per ``softTrimRun`` commits, at most:
    /// what bounds the cost of trimming, whatever the size of the commits being trimmed (a bulk
    /// load's commits hold thousands of entries each). Each write removes its share (128), so
    /// that a backlog is paid evenly, not by one commit in 16; a run of small trimmed commits fits
    /// one share, so the other commits of the run write only the journal's newest pages.
    static let removalsPerRun = 2_048

    /// Trims the oldest commits that retention lets go (none while fewer than `minimumRun` may
    /// go and no hard bound is passed), then removes keys of trimmed commits: at most `budget`,
    /// or with a `minimumRun` above 1, its share for one commit of the run (`budget / minimumRun`).
    ///
    /// Trimming is two steps. The first retained sequence moves at once, which is all readers
    /// look at: nothing below it is ever read. The trimmed commits' keys are then removed, a
    /// bounded number per commit, oldest first, so a large trimmed commit is removed over several
    /// later commits instead of making one slow. The newest commit is trimmed only when every key
    /// left fits the budget, so the journal's last key always belongs to a retained commit, and
    /// the newest sequence stays one lookup (``SystemDatabases/newestSequence(in:)``).
    /// - Returns: whether keys of trimmed commits are left to remove (``removeTrimmedKeys(in:budget:)``).
    @discardableResult
    func trim(in txn: borrowing LMDBTransaction, lastSequence: UInt64, budget: Int, minimumRun: UInt64 = 1) throws -> Bool {
        guard lastSequence > 0 else { return false }
        // Read here, not passed in: a request earlier in the same transaction may have trimmed.
        var first = try core.system.firstRetained(in: txn)
        let oldest = try txn.withCursor(core.system.journal) { cursor in try cursor.first() ? try JournalKeys.sequence(from: cursor.key) : nil }
        let (keepFrom, forced) = try retainedFrom(in: txn, firstSequence: first, lastSequence: lastSequence,
                                                  removalPending: oldest.map { $0 < first } ?? false)
        if keepFrom > first, forced || keepFrom - first >= minimumRun {
            var target = keepFrom
            if target > lastSequence, try txn.statistics(core.system.journal).entries > budget { target = lastSequence }
            if target > first {
                try txn.put(core.system.meta, key: MetaKey.firstRetained, value: MetaKey.encode(target))
                first = target
            }
        }
        guard let oldest, oldest < first else { return false }
        return try removeKeys(before: first, in: txn, budget: minimumRun <= 1 ? budget : max(1, budget / Int(minimumRun)))
    }

    /// Removes at most `budget` keys of commits already trimmed (below the first retained
    /// sequence), oldest first, and moves nothing else: the writer's work while no write waits.
    /// - Returns: whether such keys are left.
    func removeTrimmedKeys(in txn: borrowing LMDBTransaction, budget: Int) throws -> Bool {
        try removeKeys(before: try core.system.firstRetained(in: txn), in: txn, budget: budget)
    }

    private func removeKeys(before first: UInt64, in txn: borrowing LMDBTransaction, budget: Int) throws -> Bool {
        try txn.withCursor(core.system.journal) { cursor in
            var found = try cursor.first()
            var removed = 0
            while found, try JournalKeys.sequence(from: cursor.key) < first {
                guard removed < budget else { return true }
                try cursor.deleteCurrent()
                removed += 1
                // After a delete LMDB leaves the cursor on the next key, which `next` returns
                // without moving: no descent from the root for each key.
                found = try cursor.next()
            }
            return false
        }
    }
}
