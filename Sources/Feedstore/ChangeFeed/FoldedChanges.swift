/// What the commits since a consumer's last batch did to the records its subscription concerns:
/// per record, its entry key in the watched index before the span and after it, and the fields
/// changed in between. Folding keeps one entry per record, so memory grows with the records
/// changed, not with the commits, and stops at a limit (then the consumer resets instead).
struct FoldedChanges {
    /// Changed records of the watched entity, by encoded primary key.
    var records: [[UInt8]: ChangedRecord] = [:]
    /// Ids of changed records of related entities, by the related entity's catalog number.
    var related: [UInt32: Set<FieldValue>] = [:]
    /// More records changed than a consumer may hold: it must take a whole new snapshot.
    var overflowed = false

    var isEmpty: Bool { records.isEmpty && related.isEmpty && !overflowed }

    /// Folds one journal entry in; `before` and `after` are the record's keys in the watched
    /// index (nil for a single-record subscription, which has no index).
    mutating func fold(_ entry: JournalFold.Entry, before: [UInt8]?, after: [UInt8]?, limit: Int) {
        guard !overflowed else { return }
        let record = entry.record
        if var change = records[record.primaryKey] {
            change.newKey = after
            change.fieldIDs.formUnion(record.changedFieldIDs)
            if record.kind != .update { change.allFields = true }
            records[record.primaryKey] = change
        } else if records.count < limit {
            records[record.primaryKey] = ChangedRecord(id: entry.id, primaryKey: record.primaryKey, oldKey: before, newKey: after,
                                                       fieldIDs: Set(record.changedFieldIDs), allFields: record.kind != .update)
        } else {
            overflow()
        }
    }

    /// Notes that a related record changed.
    mutating func foldRelated(_ entry: JournalFold.Entry, limit: Int) {
        guard !overflowed else { return }
        let inserted = related[entry.record.entityID, default: []].insert(entry.id).inserted
        if inserted, related.values.reduce(0, { $0 + $1.count }) > limit { overflow() }
    }

    /// Drops what was folded: the consumer must take a whole new snapshot.
    mutating func overflow() {
        records = [:]
        related = [:]
        overflowed = true
    }
}
