/// A position in a watched query: a section and a row within it.
public struct RowPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The section index.
    public var section: Int
    /// The row within the section.
    public var row: Int

    /// The path of `row` in `section`.
    public init(section: Int, row: Int) {
        self.section = section
        self.row = row
    }

    /// Section order, then row order.
    public static func < (a: RowPath, b: RowPath) -> Bool { (a.section, a.row) < (b.section, b.row) }

    /// `[section, row]`.
    public var description: String { "[\(section), \(row)]" }
}

/// The changes that take a watcher's snapshot from one journal sequence to a later one, in the
/// shape table and collection views apply (see <doc:ChangeBatchContract>).
///
/// Every list is sorted ascending by its path. Deletes and move sources use old paths; inserts
/// and move destinations use new paths. Apply: remove rows at deletes and move sources, remove the
/// deleted sections, insert the new sections, then insert rows at inserts and move destinations.
/// No row appears twice across the lists.
public struct ChangeBatch<E: Entity>: Sendable {
    /// A row that left the snapshot.
    public struct Delete: Sendable {
        /// The row's path (old for deletes, new for inserts).
        public var path: RowPath
        /// The row's primary key.
        public var id: E.ID
    }

    /// A row that joined the snapshot, with its value.
    public struct Insert: Sendable {
        /// The row's path (old for deletes, new for inserts).
        public var path: RowPath
        /// The row's primary key.
        public var id: E.ID
        /// The row's value after the change.
        public var value: E
    }

    /// A row whose own sort key changed so that its order among the other rows changed; its
    /// new value, and the fields that changed.
    public struct Move: Sendable {
        /// The row's old path.
        public var from: RowPath
        /// The row's new path.
        public var to: RowPath
        /// The row's primary key.
        public var id: E.ID
        /// The fields that changed (empty when any may have: a delete and re-insert).
        public var fields: [String]
        /// The row's value after the change.
        public var value: E
    }

    /// A row that stayed in order but whose content changed; its old and new paths, changed
    /// fields and new value.
    public struct Update: Sendable {
        /// The row's old path.
        public var from: RowPath
        /// The row's new path.
        public var to: RowPath
        /// The row's primary key.
        public var id: E.ID
        /// The fields that changed (empty when any may have: a delete and re-insert).
        public var fields: [String]
        /// The row's value after the change.
        public var value: E
    }

    /// The sequences, flags and section changes (``RowChangeBatch`` shows them as the batch's own).
    public var header: BatchHeader
    /// Rows that left, at old paths.
    public var deletes: [Delete] = []
    /// Rows that joined, at new paths.
    public var inserts: [Insert] = []
    /// Rows that moved, old path to new path.
    public var moves: [Move] = []
    /// Rows whose content changed, with old and new path.
    public var updates: [Update] = []

    /// Whether the batch changes nothing (such batches are not delivered).
    public var isEmpty: Bool {
        sectionDeletes.isEmpty && sectionInserts.isEmpty && deletes.isEmpty && inserts.isEmpty && moves.isEmpty && updates.isEmpty
    }
}
