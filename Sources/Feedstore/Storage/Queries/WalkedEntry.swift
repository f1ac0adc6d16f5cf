import Foundation

/// One entry of ``ReadTransaction/forEachEntry(entity:index:range:reverse:offset:limit:filter:_:)``:
/// its key and its record, read from the store's pages only when asked for.
///
/// It borrows the transaction's pages, so it is valid only inside the closure it is lent to;
/// keep what its methods return, not the entry.
public struct WalkedEntry {
    let entry: ScannedEntry
    let transaction: ReadTransaction
    let entity: EntitySchema

    /// The primary key.
    public func id() throws -> FieldValue { try entry.id() }

    /// The index components (empty in primary-key order).
    public func key() throws -> [FieldValue] { try entry.components() }

    /// The record's fields by name.
    public func fields() throws -> [String: FieldValue] {
        var entity = entity
        return try transaction.decodeFields(entry.record, of: &entity, id: entry.idForMessages)
    }

    /// The values of the fields named `names`, in that order (null where the record has none):
    /// what a table row shows, read by field number without building a dictionary.
    public func values(of names: [String]) throws -> [FieldValue] {
        var entity = entity
        let values = try transaction.decodeValues(entry.record, of: &entity, id: entry.idForMessages)
        return names.map { values.value(ofField: $0) }
    }

    /// The record's fields as one JSON object (``FieldValue/jsonText``, keys sorted), written
    /// straight from the stored bytes.
    public func recordJSON() throws -> String {
        var entity = entity
        return try transaction.recordJSON(entry.record, of: &entity, id: entry.idForMessages)
    }
}

extension ReadTransaction {
    /// Walks the entries ``entries(entity:index:range:reverse:offset:limit:filter:)`` returns, in the
    /// same order, lending each to `body` instead of gathering them: memory stays constant
    /// whatever the range's size. An offset through an index is skipped through its counts; in
    /// primary-key order, which has no counts, the skipped entries are walked.
    /// - Complexity: O(log n + k) through an index for k entries visited; O(offset + k) in
    ///   primary-key order.
    public func forEachEntry(entity name: String, index: String?, range: IndexRange = .all, reverse: Bool = false,
                             offset: Int = 0, limit: Int? = nil, filter: IndexCondition? = nil, _ body: (WalkedEntry) throws -> Void) throws
    {
        try walk(entity: name, index: index, range: range, reverse: reverse, offset: offset, limit: limit, filter: filter) { entry, entity in
            try body(WalkedEntry(entry: entry, transaction: self, entity: entity))
        }
    }
}
