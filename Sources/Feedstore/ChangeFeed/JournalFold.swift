/// Reads a span of the journal for the change feed: by catalog numbers, decoding only entries of
/// entities someone subscribes to (an entry's entity number is read first, before the rest).
enum JournalFold {
    /// One decoded journal entry and the commit it belongs to.
    final class Entry {
        let sequence: UInt64
        let record: JournalRecord
        /// The record's primary key, decoded when a subscription first needs it (most entries
        /// reach none), then shared by every subscription it reaches.
        lazy var id: FieldValue = (try? KeyDecoder.decode(record.primaryKey).first?.value) ?? .null

        init(sequence: UInt64, record: JournalRecord) {
            self.sequence = sequence
            self.record = record
        }
    }

    /// The entries of commits after `sequence` through `head` whose entity is in `entities`, or
    /// nil when the span cannot be followed: commits in it were trimmed already, or it holds
    /// more than `limit` such entries (its subscribers then take whole new snapshots).
    /// - Complexity: O(log n + e) for e entries in the span.
    static func read(_ txn: borrowing LMDBTransaction, system: SystemDatabases, after sequence: UInt64, through head: UInt64,
                     entities: Set<UInt32>, limit: Int) throws -> [Entry]?
    {
        guard sequence < head else { return [] }
        if sequence + 1 < (try system.firstRetained(in: txn)) { return nil }
        var entries: [Entry] = []
        let complete = try txn.withCursor(system.journal) { cursor -> Bool in
            var found = try cursor.seek(atOrAfter: JournalKeys.sequenceKey(sequence + 1))
            while found {
                let seq = try JournalKeys.sequence(from: cursor.key)
                if seq > head { break }
                if try !JournalKeys.isHeader(cursor.key), entities.contains(try JournalRecord.entityID(of: cursor.value)) {
                    entries.append(Entry(sequence: seq, record: try JournalRecord.decode(cursor.value)))
                    if entries.count > limit { return false }
                }
                found = try cursor.next()
            }
            return true
        }
        return complete ? entries : nil
    }
}
