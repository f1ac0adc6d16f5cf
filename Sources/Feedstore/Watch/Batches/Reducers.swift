/// How a watcher makes the batch it delivers from the engine's rows (``RowChanges``): paths,
/// primary keys and changed fields, without values. The three kinds live here, in one place.
protocol BatchReducer: Sendable {
    associatedtype Batch: Sendable
    func batch(from rows: RowChanges, in tx: ReadTransaction) throws -> Batch
}

/// Typed values (``ChangeBatch``): the rows the batch names read in one pass by their primary
/// keys, as `E`.
struct ValuesReducer<E: Entity>: BatchReducer {
    func batch(from rows: RowChanges, in tx: ReadTransaction) throws -> ChangeBatch<E> {
        func id(_ value: FieldValue) throws -> E.ID {
            guard let id = E.ID(fieldValue: value) else {
                throw FeedstoreError.decodingFailed(entity: E.entityName, id: value, reason: "the id is not a \(E.ID.self)")
            }
            return id
        }
        var values: [E] = []
        values.reserveCapacity(rows.valuesToRead)
        try rows.readValues(in: tx, entity: E.entityName) { stored, entity, id in
            values.append(try tx.decodeEntity(E.self, stored, of: &entity, id: id))
        }
        var batch = ChangeBatch<E>(header: rows.header)
        batch.deletes = try rows.deletes.map { .init(path: $0.path, id: try id($0.id)) }
        // Values are in the order they were read: inserts, moves, updates.
        var v = values.startIndex
        batch.inserts = try rows.inserts.map { defer { v += 1 }; return .init(path: $0.path, id: try id($0.id), value: values[v]) }
        batch.moves = try rows.moves.map { defer { v += 1 }; return .init(from: $0.from, to: $0.to, id: try id($0.id), fields: $0.fields, value: values[v]) }
        batch.updates = try rows.updates.map {
            defer { v += 1 }
            return .init(from: $0.from, to: $0.to, id: try id($0.id), fields: $0.fields, value: values[v])
        }
        return batch
    }
}

/// Records by field name (``DynamicChangeBatch``), for code without the entity's type.
struct RecordsReducer: BatchReducer {
    let entity: String

    func batch(from rows: RowChanges, in tx: ReadTransaction) throws -> DynamicChangeBatch {
        var records: [[String: FieldValue]] = []
        records.reserveCapacity(rows.valuesToRead)
        try rows.readValues(in: tx, entity: entity) { stored, entity, id in
            records.append(try tx.decodeFields(stored, of: &entity, id: id))
        }
        var batch = DynamicChangeBatch(header: rows.header)
        batch.deletes = rows.deletes.map { .init(path: $0.path, id: $0.id, record: nil) }
        var r = records.startIndex
        batch.inserts = rows.inserts.map { defer { r += 1 }; return .init(path: $0.path, id: $0.id, record: records[r]) }
        batch.moves = rows.moves.map { defer { r += 1 }; return .init(from: $0.from, to: $0.to, id: $0.id, fields: $0.fields, record: records[r]) }
        batch.updates = rows.updates.map { defer { r += 1 }; return .init(from: $0.from, to: $0.to, id: $0.id, fields: $0.fields, record: records[r]) }
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
    /// How many rows' values a batch carries.
    var valuesToRead: Int { inserts.count + moves.count + updates.count }

    /// Reads the records of the rows whose values a batch carries in one pass, by their primary
    /// keys, lending each to `visit` in the order the reducers take them: inserts, moves, updates.
    /// - Throws: ``missing(_:_:)`` for a row without its record.
    func readValues(in tx: ReadTransaction, entity name: String,
                    _ visit: (_ stored: UnsafeRawBufferPointer, _ entity: inout EntitySchema, _ id: FieldValue) throws -> Void) throws
    {
        var keys: [ReadTransaction.RowKey] = []
        keys.reserveCapacity(valuesToRead)
        for row in inserts { keys.append(.init(id: row.id, primaryKey: row.primaryKey)) }
        for pair in moves { keys.append(.init(id: pair.id, primaryKey: pair.primaryKey)) }
        for pair in updates { keys.append(.init(id: pair.id, primaryKey: pair.primaryKey)) }
        try tx.readRecords(entity: name, keys: keys) { stored, entity, id in
            guard let stored else { throw Self.missing(name, id) }
            try visit(stored, &entity, id)
        }
    }

    /// A row the index holds without its record.
    static func missing(_ entity: String, _ id: FieldValue) -> FeedstoreError {
        .corruptData(what: "journal", reason: "\(entity) \(id.jsonText) is in the index but not stored")
    }
}
