import Foundation

extension WriteTransaction {
    enum WriteMode { case insert, update, upsert }

    /// Inserts a new record.
    /// - Throws: ``FeedstoreError/recordExists(entity:id:)`` when the id is taken;
    ///   ``FeedstoreError/uniqueViolation(entity:index:key:existingID:)``,
    ///   ``FeedstoreError/keyTooLarge(entity:index:size:limit:)``. Nothing is written on error.
    /// - Complexity: O(i log n) for i indexes over n records.
    public func insert<E: Entity>(_ record: E) throws {
        try write(record, mode: .insert)
    }

    /// Inserts the record, or replaces the record with the same id. Writing identical content
    /// changes nothing and adds nothing to the journal.
    /// - Complexity: O(i log n) for i indexes over n records.
    public func put<E: Entity>(_ record: E) throws {
        try write(record, mode: .upsert)
    }

    /// Replaces an existing record.
    /// - Throws: ``FeedstoreError/recordNotFound(entity:id:)`` when no record has the id.
    /// - Complexity: O(i log n) for i indexes over n records.
    public func update<E: Entity>(_ record: E) throws {
        try write(record, mode: .update)
    }

    /// Deletes the record with `id`; returns whether there was one.
    /// - Complexity: O(i log n) for i indexes over n records.
    @discardableResult
    public func delete<E: Entity>(_ type: E.Type, id: E.ID) throws -> Bool {
        try deleteRecord(entity: E.entityName, id: id.fieldValue)
    }

    /// Deletes every record in `range` of `index`; returns how many.
    /// - Complexity: O(k i log n) for k deleted records.
    @discardableResult
    public func deleteRange<E: Entity>(_ type: E.Type, index: String, range: IndexRange) throws -> Int {
        let matching = try ids(entity: E.entityName, index: index, range: range)
        for id in matching { _ = try deleteRecord(entity: E.entityName, id: id) }
        return matching.count
    }

    /// Deletes every record of the entity; returns how many.
    @discardableResult
    public func deleteAll<E: Entity>(_ type: E.Type) throws -> Int {
        let matching = try ids(entity: E.entityName, index: nil, range: .all)
        for id in matching { _ = try deleteRecord(entity: E.entityName, id: id) }
        return matching.count
    }

    /// Inserts the record with primary key `id` and `fields`, or replaces the record with that
    /// id, without the application's types: what tools, loaders and replicas write. The record
    /// is held to what the entity's type reads (``CatalogEntity/declaredKinds``): each value is
    /// converted to its field's kind where that is lossless (ISO 8601 text to a date, base64
    /// text to bytes, UUID text to a UUID, integral numbers between the integer and double
    /// kinds), and a value of another kind, a required field that is missing or null, or a field
    /// the type does not declare refuses the record. An entity declared without a type holds
    /// each field to the one kind its records have given it, and takes new fields. Nested values
    /// are held to the nested fields the type declares.
    /// - Parameters:
    ///   - name: the entity's name.
    ///   - id: the primary key, converted to the entity's key kind as values are.
    ///   - fields: the record's fields by name (nested values as objects and arrays); null is
    ///     the same as an absent field.
    ///   - keepingUndeclaredFields: store fields the type does not declare instead of refusing
    ///     the record (the type ignores them when it reads the record).
    /// - Throws: ``FeedstoreError/recordRefused(entity:id:field:reason:)``;
    ///   ``FeedstoreError/unknownEntity(_:entities:)``; ``FeedstoreError/invalidRange(entity:index:reason:)``
    ///   for an id of the wrong kind; the errors of ``put(_:)``. Nothing is written on error.
    /// - Complexity: O(i log n) for i indexes over n records.
    public func put(entity name: String, id: FieldValue, fields: [String: FieldValue], keepingUndeclaredFields: Bool = false) throws {
        let (entity, id, converted) = try conforming(fields, entity: name, id: id, keepingUndeclaredFields: keepingUndeclaredFields)
        try writeRecord(try placing(converted, in: RecordValues(entity: entity)), id: id, mode: .upsert)
    }

    /// Stores a record exactly as another store holds it (its stored encoding, every value of its
    /// own kind): a replica applying its origin's commit. The origin held the record to its types
    /// when it was written, so it is not held to them again; fields the catalog lacks join it, as
    /// in ``put(entity:id:fields:keepingUndeclaredFields:)``. The fields go from the bytes to their
    /// catalog slots with no dictionary between.
    /// - Throws: ``FeedstoreError/unknownEntity(_:entities:)``; ``FeedstoreError/invalidRange(entity:index:reason:)``
    ///   for an id of the wrong kind; the errors of ``put(_:)``. Nothing is written on error.
    @_spi(Replication) public func put(entity name: String, id: FieldValue, stored record: ShippedRecord) throws {
        let entity = try entity(name)
        let id = try entity.catalog.primaryKeyComponent(id)
        try writeRecord(try placing(try record.valuedFields(), in: RecordValues(entity: entity)), id: id, mode: .upsert)
    }

    /// Inserts a new record by name, as ``put(entity:id:fields:keepingUndeclaredFields:)`` does.
    /// - Throws: ``FeedstoreError/recordExists(entity:id:)`` when the id is taken; the errors of
    ///   ``put(entity:id:fields:keepingUndeclaredFields:)``. Nothing is written on error.
    public func insert(entity name: String, id: FieldValue, fields: [String: FieldValue], keepingUndeclaredFields: Bool = false) throws {
        let (entity, id, converted) = try conforming(fields, entity: name, id: id, keepingUndeclaredFields: keepingUndeclaredFields)
        try writeRecord(try placing(converted, in: RecordValues(entity: entity)), id: id, mode: .insert)
    }

    /// The entity, the key and `fields` as a write by name stores them: held to the entity's
    /// type, converted where that is lossless, nulls dropped.
    func conforming(_ fields: [String: FieldValue], entity name: String, id: FieldValue, keepingUndeclaredFields: Bool)
        throws -> (EntitySchema, FieldValue, [String: FieldValue])
    {
        let entity = try entity(name)
        let id = try entity.catalog.primaryKeyComponent(id)
        var converted = fields
        if let shape = entity.shape {
            switch shape.conform(fields, keepingUndeclared: keepingUndeclaredFields) {
            case let .success(conformed): converted = conformed
            case let .failure(problem):
                throw FeedstoreError.recordRefused(entity: name, id: id, field: problem.field, reason: problem.reason)
            }
        }
        // Null is no value: the record does not hold the field. Fields the shape does not hold
        // (kept undeclared ones) take the kinds the catalog learned.
        for (field, value) in converted {
            if value.kindRank == 0 {
                converted[field] = nil
            } else if entity.shape?.root.members[field] == nil {
                converted[field] = entity.catalog.coerce(value, toField: field)
            }
        }
        return (entity, id, converted)
    }

    /// Deletes the record with primary key `id` without the application's types; returns
    /// whether it existed.
    /// - Throws: ``FeedstoreError/unknownEntity(_:entities:)``; ``FeedstoreError/invalidRange(entity:index:reason:)``
    ///   for an id of the wrong kind.
    @discardableResult
    public func delete(entity name: String, id: FieldValue) throws -> Bool {
        try deleteRecord(entity: name, id: try entity(name).catalog.primaryKeyComponent(id))
    }

    // MARK: The write path

    private func write<E: Entity>(_ record: E, mode: WriteMode) throws {
        let entity = try entity(E.entityName)
        let encoded: (record: RecordValues, unplaced: [String: FieldValue])?
        do {
            encoded = try FieldValueEncoder.encodeRecord(record, of: entity)
        } catch {
            throw FeedstoreError.encodingFailed(entity: E.entityName, reason: "\(error)")
        }
        guard let encoded else {
            throw FeedstoreError.encodingFailed(entity: E.entityName, reason: "an entity must encode as a keyed container")
        }
        var values = encoded.record
        if !encoded.unplaced.isEmpty { values = try placing(encoded.unplaced, in: values) }
        try writeRecord(values, id: record.id.fieldValue, mode: mode)
    }

    /// `values` with `fields` set by name; fields the catalog lacks join it first (see
    /// ``learnFields(_:of:)``), and the values are then held against the catalog that has them.
    private func placing(_ fields: some Collection<(key: String, value: FieldValue)>, in values: RecordValues) throws -> RecordValues {
        // Most writes name only fields the catalog has, of the kinds it gave them: one lookup
        // each, and nothing to learn.
        var placed = values
        for (name, value) in fields {
            guard let field = values.entity.slot(named: name), field.accepts(value) else { return try placingLearned(fields, in: values) }
            placed.set(value, at: field.id)
        }
        return placed
    }

    /// ``placing(_:in:)`` once the catalog has learned `fields`.
    private func placingLearned(_ fields: some Collection<(key: String, value: FieldValue)>, in values: RecordValues) throws -> RecordValues {
        let entity = try learnFields(fields, of: values.entity)
        var placed = RecordValues(entity: entity, values: values.values)
        for (name, value) in fields {
            guard let field = entity.slot(named: name) else {
                throw FeedstoreError.encodingFailed(entity: entity.name, reason: "the catalog did not take field \(name)")
            }
            placed.set(value, at: field.id)
        }
        return placed
    }

    /// Writes one record held by catalog field number: the path every typed write takes.
    private func writeRecord(_ values: RecordValues, id: FieldValue, mode: WriteMode) throws {
        try withRecordBuffers { buffers in
            var entity = values.entity
            try appendPrimaryKey(id, entity: entity, to: &buffers.primaryKey)
            values.encode(into: &buffers.bytes)
            let primaryKey = buffers.primaryKey, bytes = buffers.bytes

            // Inserts and upserts try to add the record first: a new record then costs one
            // descent. Every check that can refuse the record (key sizes, unique indexes, keyable
            // values) runs before its index entries are written, so a refusal that the closure
            // catches leaves nothing of the record behind: a new record is taken out again, an
            // existing one is not yet touched.
            let old: [UInt8]? = mode == .update ? try access { try $0.get(entity.records, key: primaryKey) }
                : try putRecordIfAbsent(entity, key: primaryKey, value: bytes)
            switch (mode, old) {
            case (.insert, .some): throw FeedstoreError.recordExists(entity: entity.name, id: id)
            case (.update, .none): throw FeedstoreError.recordNotFound(entity: entity.name, id: id)
            default: break
            }
            if old == bytes { return }
            let oldValues = try old.map { bytes in try bytes.withUnsafeBytes { try decodeValues($0, of: &entity, id: id) } }
            let changed = oldValues.map { values.changedFieldIDs(from: $0) } ?? []
            do {
                try planIndexes(of: entity, primaryKey: primaryKey, before: oldValues, after: values, changed: changed,
                                into: &buffers.indexChanges)
            } catch {
                if old == nil { try access { _ = try $0.delete(entity.records, key: primaryKey) } }
                throw error
            }
            if old != nil { _ = try access { try $0.put(entity.records, key: primaryKey, value: bytes) } }
            try applyIndexChanges(buffers.indexChanges, of: entity)
            try appendJournal(JournalRecord(entityID: entity.catalog.id, primaryKey: primaryKey, kind: oldValues == nil ? .insert : .update,
                                            changedFieldIDs: changed, indexChanges: buffers.indexChanges,
                                            record: try keepsRecordImages() ? bytes : nil), using: &buffers)
        }
    }

    /// Stores a new record unless its key is taken; then returns the stored bytes and writes
    /// nothing. Records whose ids ascend (sequential ids, time-ordered ids) are appended, which
    /// fills the records tree's pages; after one id that does not sort last, the transaction
    /// stops trying for that entity.
    private func putRecordIfAbsent(_ entity: EntitySchema, key: [UInt8], value: [UInt8]) throws -> [UInt8]? {
        try access { txn in
            if !unorderedRecords.contains(entity.records) {
                if try txn.append(entity.records, key: key, value: value) { return nil }
                unorderedRecords.append(entity.records)
            }
            return try txn.putIfAbsent(entity.records, key: key, value: value)
        }
    }

    func deleteRecord(entity name: String, id: FieldValue) throws -> Bool {
        var entity = try entity(name)
        return try withRecordBuffers { buffers in
            try appendPrimaryKey(id, entity: entity, to: &buffers.primaryKey)
            let primaryKey = buffers.primaryKey
            guard let old = try access({ try $0.get(entity.records, key: primaryKey) }) else { return false }
            let oldValues = try old.withUnsafeBytes { try decodeValues($0, of: &entity, id: id) }
            try planIndexes(of: entity, primaryKey: primaryKey, before: oldValues, after: nil, changed: [], into: &buffers.indexChanges)
            try applyIndexChanges(buffers.indexChanges, of: entity)
            try access { _ = try $0.delete(entity.records, key: primaryKey) }
            try appendJournal(JournalRecord(entityID: entity.catalog.id, primaryKey: primaryKey, kind: .delete,
                                            changedFieldIDs: [], indexChanges: buffers.indexChanges), using: &buffers)
            return true
        }
    }

    /// Appends to `changes` the record's entry key before and after the write in every index it
    /// belongs to (in index order; a text index, one change per word either side has, in word
    /// order), checking each new key (size, uniqueness) without writing anything. `changed` lists
    /// the numbers of the fields an update changed: indexes that read none of them keep their
    /// keys without recomputing them.
    private func planIndexes(of entity: EntitySchema, primaryKey: [UInt8], before: RecordValues?, after: RecordValues?,
                             changed: [UInt32], into changes: inout [JournalRecord.IndexChange]) throws
    {
        let changedNames = changed.compactMap { entity.fieldTable.name(id: $0) }
        for index in entity.indexes {
            let untouched = before != nil && after != nil && !changedNames.contains(where: index.fieldsRead.contains)
            if index.isText {
                try planWords(of: index, entity: entity, primaryKey: primaryKey, before: before, after: untouched ? before : after, into: &changes)
                continue
            }
            let oldKey = try before.flatMap { try index.key(of: $0, primaryKey: primaryKey) }
            let newKey = untouched ? oldKey : try after.flatMap { try index.key(of: $0, primaryKey: primaryKey) }
            if oldKey == nil && newKey == nil { continue }
            changes.append(JournalRecord.IndexChange(indexID: index.id, before: oldKey, after: newKey))
            if let newKey, let after, newKey != oldKey {
                try checkKeySize(newKey, entity: entity, index: index.definition.name)
                if let unique = index.uniqueKey(index.components(of: after)) {
                    try checkUnique(index, key: unique, entry: newKey, primaryKey: primaryKey)
                }
            }
        }
    }

    /// A text index's part of ``planIndexes``: the record's entries before and after, paired by
    /// word (both lists are in key order, whose first component is the word).
    private func planWords(of index: IndexSchema, entity: EntitySchema, primaryKey: [UInt8], before: RecordValues?, after: RecordValues?,
                           into changes: inout [JournalRecord.IndexChange]) throws
    {
        let old = try before.map { try index.keys(of: $0, primaryKey: primaryKey) } ?? []
        let new = try after.map { try index.keys(of: $0, primaryKey: primaryKey) } ?? []
        func word(_ key: [UInt8]) throws -> [UInt8] {
            Array(key.prefix(try key.withUnsafeBytes { try KeyDecoder.lengthOfComponents(1, in: $0) }))
        }
        func order(_ a: [UInt8], _ b: [UInt8]) throws -> Int {
            let (x, y) = (try word(a), try word(b))
            return x == y ? 0 : x.sortsBefore(y) ? -1 : 1
        }
        var i = 0, j = 0
        while i < old.count || j < new.count {
            let order = i == old.count ? 1 : j == new.count ? -1 : try order(old[i], new[j])
            let change = JournalRecord.IndexChange(indexID: index.id, before: order <= 0 ? old[i] : nil, after: order >= 0 ? new[j] : nil)
            if order <= 0 { i += 1 }
            if order >= 0 { j += 1 }
            if let key = change.after, key != change.before { try checkKeySize(key, entity: entity, index: index.definition.name) }
            changes.append(change)
        }
    }

    /// Moves the record's entries from their old keys to their new ones, writing only entries
    /// that change. `changes` comes from ``planIndexes``, in the entity's index order.
    private func applyIndexChanges(_ changes: [JournalRecord.IndexChange], of entity: EntitySchema) throws {
        var next = 0
        for index in entity.indexes {
            while next < changes.count && changes[next].indexID == index.id {
                let change = changes[next]
                next += 1
                if change.before == change.after { continue }
                if let oldKey = change.before { try IndexStorage(index: index).remove(oldKey, in: self) }
                if let newKey = change.after { try IndexStorage(index: index).insert(newKey, in: self) }
            }
        }
    }

    /// Refuses the entry `entry` of the record `primaryKey` when another record's entry holds
    /// its unique key: entries sort by components then primary key, so the first entry at or
    /// after the components is the holder if there is one.
    func checkUnique(_ index: IndexSchema, key unique: [FieldValue], entry: [UInt8], primaryKey: [UInt8]) throws {
        let prefix = Array(entry.prefix(entry.count - primaryKey.count))
        let holder: [UInt8]? = try access { txn in
            try txn.withCursor(index.database) { (cursor) throws -> [UInt8]? in
                guard try cursor.seek(atOrAfter: prefix), cursor.key.starts(with: prefix) else { return nil }
                return Array(cursor.key.dropFirst(prefix.count))
            }
        }
        if let holder, holder != primaryKey { throw index.violation(of: unique, heldBy: holder) }
    }

    func checkKeySize(_ key: [UInt8], entity: EntitySchema, index: String?) throws {
        let limit = core.environment.maxKeySize
        if key.count > limit {
            throw FeedstoreError.keyTooLarge(entity: entity.name, index: index, size: key.count, limit: limit)
        }
    }

    /// Appends the encoded primary key to the empty array `key`.
    private func appendPrimaryKey(_ id: FieldValue, entity: EntitySchema, to key: inout [UInt8]) throws {
        do { try KeyEncoding.append(id, descending: false, to: &key) } catch {
            throw FeedstoreError.encodingFailed(entity: entity.name, reason: "a \(id.kindName) cannot be a primary key")
        }
        try checkKeySize(key, entity: entity, index: nil)
    }

    /// Adds fields the catalog has not seen, and marks fields whose kind changed as "mixed".
    private func learnFields(_ fields: some Collection<(key: String, value: FieldValue)>, of entity: EntitySchema) throws -> EntitySchema {
        var additions: [(String, String)] = []
        var mixed: [String] = []
        for (name, value) in fields {
            if case .null = value { continue }
            if let field = entity.slot(named: name) {
                if !field.accepts(value) { mixed.append(name) }
            } else {
                additions.append((name, value.kindName))
            }
        }
        if additions.isEmpty && mixed.isEmpty { return entity }
        try updateCatalog { catalog in
            guard var updated = catalog.entities[entity.name] else { return }
            for (name, kind) in additions.sorted(by: { $0.0 < $1.0 }) {
                updated.fields.append(CatalogField(id: updated.nextFieldID, name: name, kind: kind))
                updated.nextFieldID += 1
            }
            for name in mixed {
                if let i = updated.fields.firstIndex(where: { $0.name == name }) { updated.fields[i].kind = "mixed" }
            }
            catalog.entities[entity.name] = updated
        }
        return try schema.entity(entity.name)
    }
}
