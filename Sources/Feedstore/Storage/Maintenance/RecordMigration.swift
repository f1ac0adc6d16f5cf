import Foundation

/// One stored record as a migration reads it: its id and its fields by name, in the shape they
/// were written (an older version of the type, or the new one for records written since).
public struct MigrationRecord: Sendable {
    /// The primary key.
    public let id: FieldValue
    /// The stored fields by name.
    public let fields: [String: FieldValue]

    /// The field named `name`, or `.null` when the record has none.
    public subscript(_ name: String) -> FieldValue { fields[name] ?? .null }

    /// The record decoded as `type` (an older version of the entity's type, say).
    public func decode<T: Decodable>(as type: T.Type) throws -> T {
        do {
            return try FieldValueDecoder.decode(T.self, from: .object(fields))
        } catch {
            throw FeedstoreError.decodingFailed(entity: String(describing: T.self), id: id, reason: "\(error)")
        }
    }
}

/// Where a named migration of an entity stands. Kept in the store, in the transaction of each
/// step, so a migration stopped by a crash resumes after the last step that committed.
public struct MigrationProgress: Sendable, Equatable, Codable {
    /// The entity migrated.
    public var entity: String
    /// The migration's name, unique per entity.
    public var name: String
    /// Records rewritten so far, over every run.
    public var rewritten: Int
    /// Records the closure deleted so far, over every run.
    public var deleted: Int
    /// The records to go through: the entity's count when this run began plus the records
    /// earlier runs deleted (an estimate while other writers insert or delete).
    public var total: Int
    /// Whether every record has been through the closure.
    public var finished: Bool
    /// The primary key of the last record the closure saw.
    var lastKey: [UInt8]?

    /// Records done, rewritten or deleted.
    public var processed: Int { rewritten + deleted }

    static func metaKey(entity: String, name: String) -> [UInt8] { Array("migration:\(entity):\(name)".utf8) }
}

extension Store {
    /// Rewrites every record of `E`'s entity through `transform`, in primary-key order, in
    /// transactions of `recordsPerTransaction` records. Each transaction writes the new values
    /// (indexes, counts and the journal follow, as for any write) and the migration's progress
    /// together, so a migration interrupted by a crash or an error resumes where it stopped when
    /// called again with the same name, and a finished one returns at once: call it at every
    /// launch. `transform` returns the new value, with the same id, or nil to delete the record.
    ///
    /// Open the store with the new type first: its indexes are built then, and each rewritten
    /// record updates them. Until the migration finishes, records not yet rewritten may not
    /// decode as the new type. `transform` may be called again for the records of a step that
    /// did not commit, so it must not have side effects; records written by other writers during
    /// the migration reach it too, in the new shape.
    ///
    /// ```swift
    /// try store.migrate(Message.self, name: "title-to-subject") { old in
    ///     if old.fields["subject"] != nil { return try old.decode(as: Message.self) }  // already new
    ///     let v1 = try old.decode(as: MessageV1.self)
    ///     return Message(id: v1.id, subject: v1.title, …)
    /// }
    /// ```
    /// - Throws: ``FeedstoreError/migrationFailed(entity:name:reason:)`` when a new value has
    ///   another id; whatever `transform` throws (the step is rolled back; earlier ones stay).
    /// - Complexity: O(n log n) for n records; memory O(`recordsPerTransaction`).
    @discardableResult
    public func migrate<E: Entity>(_ type: E.Type, name: String, recordsPerTransaction: Int = 10_000,
                                   progress: ((MigrationProgress) -> Void)? = nil,
                                   _ transform: (MigrationRecord) throws -> E?) throws -> MigrationProgress
    {
        let entity = E.entityName
        guard !name.isEmpty, recordsPerTransaction > 0 else {
            throw FeedstoreError.migrationFailed(entity: entity, name: name, reason: "a migration needs a name and at least one record per transaction")
        }
        let key = MigrationProgress.metaKey(entity: entity, name: name)
        let start = try read { tx in
            try tx.migrationProgress(key) ?? MigrationProgress(entity: entity, name: name, rewritten: 0, deleted: 0, total: 0, finished: false)
        }
        if start.finished { return start }
        let total = try read { try $0.count(entity: entity) } + start.deleted
        while true {
            let step = try write { tx in
                var state = try tx.migrationProgress(key) ?? start
                state.total = total
                let batch = try tx.records(of: entity, after: state.lastKey, limit: recordsPerTransaction)
                for (primaryKey, record) in batch {
                    if let value = try transform(record) {
                        guard try KeyEncoding.encode([value.id.fieldValue]) == primaryKey else {
                            throw FeedstoreError.migrationFailed(entity: entity, name: name,
                                                                 reason: "record \(record.id.jsonText) came back with id \(value.id.fieldValue.jsonText); a migration keeps ids")
                        }
                        try tx.put(value)
                        state.rewritten += 1
                    } else {
                        _ = try tx.deleteRecord(entity: entity, id: record.id)
                        state.deleted += 1
                    }
                }
                state.lastKey = batch.last?.key ?? state.lastKey
                state.finished = batch.count < recordsPerTransaction
                try tx.setMigrationProgress(state, key)
                return state
            }
            progress?(step)
            if step.finished { return step }
        }
    }

    /// The progress of the migration named `name` of `E`'s entity; nil if it never ran.
    public func migrationProgress<E: Entity>(of type: E.Type, name: String) throws -> MigrationProgress? {
        try read { try $0.migrationProgress(MigrationProgress.metaKey(entity: E.entityName, name: name)) }
    }
}

extension ReadTransaction {
    /// Where the unfinished migrations of `entity` stand: nil when none is unfinished; else the
    /// smallest primary key a migration has reached (empty when one has not begun). Records
    /// after it may still be in the entity's old shape.
    func unmigratedRecordsStart(of entity: String) throws -> [UInt8]? {
        let prefix = Array("migration:\(entity):".utf8)
        var keys: [[UInt8]] = []
        try access { txn in
            try txn.withCursor(core.system.meta) { cursor in
                var more = try cursor.seek(atOrAfter: prefix)
                while more, cursor.key.starts(with: prefix) {
                    keys.append(Array(cursor.key))
                    more = try cursor.next()
                }
            }
        }
        var start: [UInt8]?
        for key in keys {
            guard let progress = try migrationProgress(key), !progress.finished else { continue }
            let reached = progress.lastKey ?? []
            if start.map({ reached.lexicographicallyPrecedes($0) }) ?? true { start = reached }
        }
        return start
    }

    func migrationProgress(_ key: [UInt8]) throws -> MigrationProgress? {
        guard let bytes = try access({ try $0.get(core.system.meta, key: key) }) else { return nil }
        do {
            return try JSONDecoder().decode(MigrationProgress.self, from: Data(bytes))
        } catch {
            throw FeedstoreError.corruptData(what: "migration progress \(String(decoding: key, as: UTF8.self))", reason: "\(error)")
        }
    }

    /// Up to `limit` records of `entity` after the primary key `after` (from the first when nil),
    /// with their encoded primary keys.
    func records(of name: String, after: [UInt8]?, limit: Int) throws -> [(key: [UInt8], record: MigrationRecord)] {
        var entity = try entity(name)
        var result: [(key: [UInt8], record: MigrationRecord)] = []
        try access { txn in
            try txn.withCursor(entity.records) { cursor in
                var found = try after.map { try cursor.seek(atOrAfter: $0) } ?? cursor.first()
                if found, let after, Array(cursor.key) == after { found = try cursor.next() }
                while found, result.count < limit {
                    let key = Array(cursor.key)
                    guard let id = try KeyDecoder.decode(key).first?.value else {
                        throw FeedstoreError.corruptData(what: "primary key of \(name)", reason: "no components")
                    }
                    let fields = try decodeFields(cursor.value, of: &entity, id: id)
                    result.append((key, MigrationRecord(id: id, fields: fields)))
                    found = try cursor.next()
                }
            }
        }
        return result
    }
}

extension WriteTransaction {
    func setMigrationProgress(_ progress: MigrationProgress, _ key: [UInt8]) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = [UInt8](try encoder.encode(progress))
        try access { _ = try $0.put(core.system.meta, key: key, value: bytes) }
    }
}
