/// A batch as the engine computes it: paths, ids and changed fields, without values. Objects
/// mode turns it into a ``ChangeBatch`` (adding values); indexes-only mode into an
/// ``IndexBatch`` (grouping rows into ranges), for which the engine leaves the ids of rows
/// pushed across a window's edges unread (`.null`).
struct RowChanges {
    struct Row {
        var path: RowPath
        var id: FieldValue
        /// The encoded primary key, by which values are read (empty when no value is read:
        /// deletes, and rows an indexes-only batch leaves unread).
        var primaryKey: [UInt8] = []
    }

    struct Pair {
        var from: RowPath
        var to: RowPath
        var id: FieldValue
        var primaryKey: [UInt8]
        var fields: [String]
    }

    /// What every kind of batch begins with.
    var header: BatchHeader
    var deletes: [Row] = []
    var inserts: [Row] = []
    /// Whole sections inserted without listing their rows (indexes-only snapshots): section
    /// index and row count.
    var insertedSections: [(section: Int, count: Int)] = []
    var moves: [Pair] = []
    var updates: [Pair] = []
    /// The batch moves the window (so it goes out even with no row changed).
    var movesWindow = false

    init(fromSequence: UInt64, toSequence: UInt64, isInitial: Bool, isReset: Bool) {
        header = BatchHeader(fromSequence: fromSequence, toSequence: toSequence, isInitial: isInitial, isReset: isReset)
    }

    var isEmpty: Bool {
        header.sectionDeletes.isEmpty && header.sectionInserts.isEmpty && deletes.isEmpty && inserts.isEmpty && insertedSections.isEmpty
            && moves.isEmpty && updates.isEmpty
    }

    mutating func sort() {
        deletes.sort { $0.path < $1.path }
        inserts.sort { $0.path < $1.path }
        moves.sort { $0.from < $1.from }
        updates.sort { $0.from < $1.from }
    }
}
