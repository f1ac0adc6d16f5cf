/// A change batch over records read without the application's types: ids are ``FieldValue``s
/// and values are the records' fields by name. Same contract as ``ChangeBatch``; delivered by
/// a ``DynamicWatcher`` (tools, generic browsers, bridges to other languages).
public struct DynamicChangeBatch: Sendable {
    /// A row that left or joined the snapshot: its path (old for deletes, new for inserts), id
    /// and, for inserts, its fields.
    public struct Row: Sendable {
        /// The row's path (old for deletes, new for inserts).
        public var path: RowPath
        /// The row's primary key.
        public var id: FieldValue
        /// The row's fields after the change (nil for deletes).
        public var record: [String: FieldValue]?
    }

    /// A row in both snapshots: a move or an update.
    public struct Pair: Sendable {
        /// The row's old path.
        public var from: RowPath
        /// The row's new path.
        public var to: RowPath
        /// The row's primary key.
        public var id: FieldValue
        /// The fields that changed (empty when any may have: a delete and re-insert).
        public var fields: [String]
        /// The row's fields after the change.
        public var record: [String: FieldValue]
    }

    /// The sequences, flags and section changes (``RowChangeBatch`` shows them as the batch's own).
    public var header: BatchHeader
    /// Rows that left, at old paths.
    public var deletes: [Row] = []
    /// Rows that joined, at new paths, with their fields.
    public var inserts: [Row] = []
    /// Rows that moved, old path to new path.
    public var moves: [Pair] = []
    /// Rows whose content changed, with old and new path.
    public var updates: [Pair] = []
}
