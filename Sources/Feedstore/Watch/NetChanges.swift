/// What a span of commits did to each record of one entity, as seen by one index: the record's
/// entry key before the span and after it, and which fields changed in between. Reading folds
/// commits in chunks, so memory grows with the records changed, not with the commits.
struct NetChanges {
    struct Change {
        var id: FieldValue
        /// The entry key in the watched index before the span (nil: not a member).
        var oldKey: [UInt8]?
        /// The entry key after the span (nil: not a member).
        var newKey: [UInt8]?
        /// Fields changed by updates in the span.
        var fields: Set<String> = []
        /// An insert or delete happened in the span, so any field may differ.
        var allFields = false
    }

    var changes: [FieldValue: Change] = [:]

    /// Folds the commits after `sequence` through `head`. Returns nil when more than `limit`
    /// records changed (the caller then resets instead of holding them all).
    /// - Throws: ``FeedstoreError/journalBehindRetention(requested:firstRetained:)``.
    static func collect(_ tx: ReadTransaction, after sequence: UInt64, through head: UInt64,
                        entity: String, index: String, limit: Int) throws -> NetChanges?
    {
        var net = NetChanges()
        var position = sequence
        while position < head {
            let commits = try tx.journal(after: position, limit: 256)
            guard let last = commits.last else { break }
            for commit in commits where commit.sequence <= head {
                for entry in commit.entries where entry.entity == entity {
                    let keys = entry.indexChanges.first { $0.index == index }
                    if var change = net.changes[entry.id] {
                        change.newKey = keys?.after?.bytes
                        change.fields.formUnion(entry.changedFields)
                        if entry.kind != .update { change.allFields = true }
                        net.changes[entry.id] = change
                    } else {
                        net.changes[entry.id] = Change(id: entry.id, oldKey: keys?.before?.bytes, newKey: keys?.after?.bytes,
                                                       fields: Set(entry.changedFields), allFields: entry.kind != .update)
                        if net.changes.count > limit { return nil }
                    }
                }
            }
            position = last.sequence
        }
        return net
    }
}
