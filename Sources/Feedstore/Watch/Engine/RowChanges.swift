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

    var fromSequence: UInt64
    var toSequence: UInt64
    var isInitial: Bool
    var isReset: Bool
    var sectionDeletes: [Int] = []
    var sectionInserts: [SectionInsert] = []
    var deletes: [Row] = []
    var inserts: [Row] = []
    /// Whole sections inserted without listing their rows (indexes-only snapshots): section
    /// index and row count.
    var insertedSections: [(section: Int, count: Int)] = []
    var moves: [Pair] = []
    var updates: [Pair] = []

    var isEmpty: Bool {
        sectionDeletes.isEmpty && sectionInserts.isEmpty && deletes.isEmpty && inserts.isEmpty && insertedSections.isEmpty
            && moves.isEmpty && updates.isEmpty
    }

    mutating func sort() {
        deletes.sort { $0.path < $1.path }
        inserts.sort { $0.path < $1.path }
        moves.sort { $0.from < $1.from }
        updates.sort { $0.from < $1.from }
    }
}

extension ChangeBatch {
    /// The batch with values, read in `tx`.
    init(_ rows: RowChanges, in tx: ReadTransaction) throws {
        func id(_ value: FieldValue) throws -> E.ID {
            guard let id = E.ID(fieldValue: value) else {
                throw FeedstoreError.decodingFailed(entity: E.entityName, id: value, reason: "the id is not a \(E.ID.self)")
            }
            return id
        }
        func value(_ key: FieldValue, _ primaryKey: [UInt8]) throws -> E {
            guard let value = try tx.get(E.self, primaryKey: primaryKey, id: key) else {
                throw FeedstoreError.corruptData(what: "journal", reason: "\(E.entityName) \(key.jsonText) is in the index but not stored")
            }
            return value
        }
        self.init(fromSequence: rows.fromSequence, toSequence: rows.toSequence, isInitial: rows.isInitial, isReset: rows.isReset)
        sectionDeletes = rows.sectionDeletes
        sectionInserts = rows.sectionInserts.map { SectionInsert(index: $0.index, key: $0.key) }
        deletes = try rows.deletes.map { Delete(path: $0.path, id: try id($0.id)) }
        inserts = try rows.inserts.map { Insert(path: $0.path, id: try id($0.id), value: try value($0.id, $0.primaryKey)) }
        moves = try rows.moves.map { Move(from: $0.from, to: $0.to, id: try id($0.id), fields: $0.fields, value: try value($0.id, $0.primaryKey)) }
        updates = try rows.updates.map { Update(from: $0.from, to: $0.to, id: try id($0.id), fields: $0.fields, value: try value($0.id, $0.primaryKey)) }
    }
}
