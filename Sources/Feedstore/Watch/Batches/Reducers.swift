/// The sequences, flags and section changes every kind of batch begins with, as the engine
/// computes them (``RowChanges``) and as each batch type carries them.
struct BatchHeader: Sendable {
    var fromSequence: UInt64
    var toSequence: UInt64
    var isInitial: Bool
    var isReset: Bool
    var sectionDeletes: [Int] = []
    var sectionInserts: [SectionInsert] = []
}

/// How a watcher makes the batch it delivers from the engine's rows (``RowChanges``): paths,
/// primary keys and changed fields, without values. The three kinds live here, in one place.
protocol BatchReducer: Sendable {
    associatedtype Batch: Sendable
    func batch(from rows: RowChanges, in tx: ReadTransaction) throws -> Batch
}

/// Typed values (``ChangeBatch``): each row the batch names read by its primary key, as `E`.
struct ValuesReducer<E: Entity>: BatchReducer {
    func batch(from rows: RowChanges, in tx: ReadTransaction) throws -> ChangeBatch<E> {
        func id(_ value: FieldValue) throws -> E.ID {
            guard let id = E.ID(fieldValue: value) else {
                throw FeedstoreError.decodingFailed(entity: E.entityName, id: value, reason: "the id is not a \(E.ID.self)")
            }
            return id
        }
        func value(_ key: FieldValue, _ primaryKey: [UInt8]) throws -> E {
            guard let value = try tx.get(E.self, primaryKey: primaryKey, id: key) else { throw RowChanges.missing(E.entityName, key) }
            return value
        }
        var batch = ChangeBatch<E>(header: rows.header)
        batch.deletes = try rows.deletes.map { .init(path: $0.path, id: try id($0.id)) }
        batch.inserts = try rows.inserts.map { .init(path: $0.path, id: try id($0.id), value: try value($0.id, $0.primaryKey)) }
        batch.moves = try rows.moves.map {
            .init(from: $0.from, to: $0.to, id: try id($0.id), fields: $0.fields, value: try value($0.id, $0.primaryKey))
        }
        batch.updates = try rows.updates.map {
            .init(from: $0.from, to: $0.to, id: try id($0.id), fields: $0.fields, value: try value($0.id, $0.primaryKey))
        }
        return batch
    }
}

/// Records by field name (``DynamicChangeBatch``), for code without the entity's type.
struct RecordsReducer: BatchReducer {
    let entity: String

    func batch(from rows: RowChanges, in tx: ReadTransaction) throws -> DynamicChangeBatch {
        func stored(_ id: FieldValue, _ primaryKey: [UInt8]) throws -> [String: FieldValue] {
            guard let fields = try tx.record(entity: entity, primaryKey: primaryKey, id: id) else { throw RowChanges.missing(entity, id) }
            return fields
        }
        var batch = DynamicChangeBatch(header: rows.header)
        batch.deletes = rows.deletes.map { .init(path: $0.path, id: $0.id, record: nil) }
        batch.inserts = try rows.inserts.map { .init(path: $0.path, id: $0.id, record: try stored($0.id, $0.primaryKey)) }
        batch.moves = try rows.moves.map { .init(from: $0.from, to: $0.to, id: $0.id, fields: $0.fields, record: try stored($0.id, $0.primaryKey)) }
        batch.updates = try rows.updates.map { .init(from: $0.from, to: $0.to, id: $0.id, fields: $0.fields, record: try stored($0.id, $0.primaryKey)) }
        return batch
    }
}

/// Positions only (``IndexBatch``): rows grouped into runs, nothing read.
struct PositionsReducer: BatchReducer {
    func batch(from rows: RowChanges, in tx: ReadTransaction) -> IndexBatch {
        var batch = IndexBatch(header: rows.header)
        batch.deletes = IndexBatch.ranges(rows.deletes.map(\.path))
        batch.inserts = IndexBatch.ranges(rows.inserts.map(\.path)) + rows.insertedSections.filter { $0.count > 0 }.map {
            .init(section: $0.section, rows: 0..<$0.count)
        }
        batch.inserts.sort { ($0.section, $0.rows.lowerBound) < ($1.section, $1.rows.lowerBound) }
        batch.moves = rows.moves.map { .init(from: $0.from, to: $0.to) }
        batch.updates = rows.updates.map { .init(from: $0.from, to: $0.to, fields: $0.fields) }
        return batch
    }
}

extension RowChanges {
    /// A row the index holds without its record.
    static func missing(_ entity: String, _ id: FieldValue) -> FeedstoreError {
        .corruptData(what: "journal", reason: "\(entity) \(id.jsonText) is in the index but not stored")
    }
}

extension ChangeBatch {
    init(header: BatchHeader) {
        self.init(fromSequence: header.fromSequence, toSequence: header.toSequence, isInitial: header.isInitial, isReset: header.isReset,
                  sectionDeletes: header.sectionDeletes, sectionInserts: header.sectionInserts)
    }
}

extension DynamicChangeBatch {
    init(header: BatchHeader) {
        self.init(fromSequence: header.fromSequence, toSequence: header.toSequence, isInitial: header.isInitial, isReset: header.isReset,
                  sectionDeletes: header.sectionDeletes, sectionInserts: header.sectionInserts)
    }
}

extension IndexBatch {
    init(header: BatchHeader) {
        self.init(fromSequence: header.fromSequence, toSequence: header.toSequence, isInitial: header.isInitial, isReset: header.isReset,
                  sectionDeletes: header.sectionDeletes, sectionInserts: header.sectionInserts)
    }
}
