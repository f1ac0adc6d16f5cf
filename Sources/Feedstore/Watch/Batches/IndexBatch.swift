/// A change batch without values, for indexes-only watchers: the same contract as
/// ``ChangeBatch``, with consecutive rows grouped into ranges so a batch costs O(runs). Rows
/// are read on demand with ``BatchWatcher/object(at:)``.
public struct IndexBatch: Sendable {
    /// Consecutive rows of one section.
    public struct RowRange: Sendable, Hashable {
        /// The section index.
        public var section: Int
        /// The row within the section.
        public var rows: Range<Int>
    }

    /// A row that moved: old path, new path.
    public struct Move: Sendable, Hashable {
        /// The row's old path.
        public var from: RowPath
        /// The row's new path.
        public var to: RowPath
    }

    /// A row whose content changed: old path, new path, changed fields.
    public struct Update: Sendable, Hashable {
        /// The row's old path.
        public var from: RowPath
        /// The row's new path.
        public var to: RowPath
        /// The fields that changed (empty when any may have: a delete and re-insert).
        public var fields: [String]
    }

    /// The sequences, flags and section changes (``RowChangeBatch`` shows them as the batch's own).
    public var header: BatchHeader
    /// Rows that left, as ranges of old paths.
    public var deletes: [RowRange] = []
    /// Rows that joined, as ranges of new paths.
    public var inserts: [RowRange] = []
    /// Rows that moved, old path to new path.
    public var moves: [Move] = []
    /// Rows whose content changed, with old and new path.
    public var updates: [Update] = []

    /// Whether the batch changes nothing.
    public var isEmpty: Bool {
        sectionDeletes.isEmpty && sectionInserts.isEmpty && deletes.isEmpty && inserts.isEmpty && moves.isEmpty && updates.isEmpty
    }

    /// Groups sorted paths into runs of consecutive rows.
    static func ranges(_ paths: [RowPath]) -> [RowRange] {
        var result: [RowRange] = []
        for path in paths {
            if let last = result.last, last.section == path.section, last.rows.upperBound == path.row {
                result[result.count - 1].rows = last.rows.lowerBound..<(path.row + 1)
            } else {
                result.append(RowRange(section: path.section, rows: path.row..<(path.row + 1)))
            }
        }
        return result
    }
}
