import Foundation

/// A consistent snapshot of the store, alive for the duration of a ``Store/read(_:)-4pmpg`` closure.
///
/// Everything read is a copy. Using the transaction after its closure returned throws
/// ``FeedstoreError/transactionEnded``. Not thread-safe: use it on the thread that received it.
public class ReadTransaction {
    let core: StoreCore
    /// Owned here so it ends exactly once: taken back by the store when the closure returns.
    /// Every read and write of the store goes through it, so it skips Swift's run-time
    /// exclusivity checks: a transaction is used on one thread, and only ``detach()`` modifies
    /// it, never while ``access(_:)`` lends it.
    @exclusivity(unchecked) private var transaction: LMDBTransaction?
    var schema: SchemaSnapshot
    /// The keyed containers typed reads decode records' top levels through, kept for the
    /// transaction's records (what `Codable` would otherwise allocate per record).
    let sharedContainers = SharedTopLevelContainers()
    /// The last entity type this transaction decoded, and whether it reads its stored fields
    /// itself: asking the run time costs a conformance lookup per record.
    @exclusivity(unchecked) private var lastDecodedType: (type: ObjectIdentifier, direct: (any StoredFieldsDecodable.Type)?)?
    /// Queries resolved in this transaction (see ``keepsWhatItReads``). Looked up on every
    /// positional read, so without run-time exclusivity checks, as ``transaction``.
    @exclusivity(unchecked) var resolvedQueries = ResolvedQueryCache()
    /// Count-tree nodes read in this transaction (see ``keepsWhatItReads``).
    let countNodes = CountNodeCache()

    /// Whether resolved queries and count-tree nodes are kept for later reads: a read
    /// transaction's snapshot never changes (a write transaction's does).
    var keepsWhatItReads: Bool { true }

    init(core: StoreCore, transaction: consuming LMDBTransaction, schema: SchemaSnapshot) {
        self.core = core
        self.transaction = consume transaction
        self.schema = schema
    }

    /// Lends the LMDB transaction to `body`; throws once the transaction has ended.
    func access<R>(_ body: (borrowing LMDBTransaction) throws -> R) throws -> R {
        switch transaction {
        case let .some(txn): return try body(txn)
        case .none: throw FeedstoreError.transactionEnded
        }
    }

    /// Lends `index`'s counted index and the transaction to `body`, for reading its counts. A
    /// read transaction's counted index reads through the nodes the transaction keeps
    /// (``keepsWhatItReads``); a write transaction first applies the count changes it deferred.
    func accessCounts<R>(of index: IndexSchema, _ body: (CountedIndex, borrowing LMDBTransaction) throws -> R) throws -> R {
        try applyDeferredCounts(of: index)
        var counted = index.counted
        if keepsWhatItReads { counted.nodes = countNodes }
        return try access { try body(counted, $0) }
    }

    /// A read transaction defers nothing; ``WriteTransaction`` does.
    func applyDeferredCounts(of index: IndexSchema?) throws {}

    /// Ends this object's use of the transaction and hands it back for commit or abort.
    func detach() -> LMDBTransaction? { transaction.take() }

    /// The catalog as this transaction sees it.
    public var catalog: Catalog { schema.catalog }

    /// Resolves an entity, reloading the catalog from this snapshot when another handle or
    /// process registered fields or entities since this handle last looked.
    func entity(_ name: String) throws -> EntitySchema {
        if let entity = schema.entities[name] { return entity }
        try reloadSchemaIfNewer()
        return try schema.entity(name)
    }

    func reloadSchemaIfNewer() throws {
        let stored = try access { try core.storedCatalogVersion(in: $0) }
        guard stored > schema.catalog.version else { return }
        schema = try core.refreshSchema()
        resolvedQueries.removeAll()
    }

    /// Decodes stored record bytes into named fields.
    func decodeFields(_ bytes: UnsafeRawBufferPointer, of entity: inout EntitySchema, id: @autoclosure () -> FieldValue?) throws -> [String: FieldValue] {
        try withStoredRecord(bytes, of: &entity, id: id) { record in
            var fields: [String: FieldValue] = [:]
            fields.reserveCapacity(record.fieldOffsets.count)
            for (i, offset) in record.fieldOffsets.enumerated() where offset >= 0 {
                if let name = record.nameTable?.name(id: UInt32(i)) { fields[name] = try StoredValue(bytes, at: offset).fieldValue() }
            }
            return fields
        }
    }

    /// A record's fields as JSON text, sorted by name, written from its stored bytes.
    func recordJSON(_ bytes: UnsafeRawBufferPointer, of entity: inout EntitySchema, id: @autoclosure () -> FieldValue?) throws -> String {
        try withStoredRecord(bytes, of: &entity, id: id) { record in
            guard let table = record.nameTable else { return "{}" }
            var out: [UInt8] = [UInt8(ascii: "{")]
            out.reserveCapacity(bytes.count * 2 + 16)
            var first = true
            for position in table.sortedPositions {
                let fieldID = Int(table.ids[position])
                guard fieldID < record.fieldOffsets.count, record.fieldOffsets[fieldID] >= 0 else { continue }
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                out += table.jsonKeys[position].utf8
                try StoredValue(bytes, at: record.fieldOffsets[fieldID]).appendJSON(to: &out)
            }
            out.append(UInt8(ascii: "}"))
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// Decodes stored record bytes straight into `E`: through its ``StoredFieldsDecodable``
    /// initializer when it has one, else through `Codable` (``StoredDecoder``); no dictionary of
    /// named fields and no tree of values on the way.
    func decodeEntity<E: Entity>(_ type: E.Type, _ bytes: UnsafeRawBufferPointer, of entity: inout EntitySchema,
                                 id: @autoclosure () -> FieldValue) throws -> E
    {
        try withStoredRecord(bytes, of: &entity, id: id) { record in
            do {
                if let direct = storedFieldsDecodable(E.self) {
                    return try Self.decode(direct, as: E.self, from: &record)
                }
                return try sharedContainers.decode(E.self, from: &record)
            } catch {
                throw FeedstoreError.decodingFailed(entity: E.entityName, id: id(), reason: "\(error)")
            }
        }
    }

    /// `type` as a ``StoredFieldsDecodable`` type, or nil when it is not one.
    private func storedFieldsDecodable<E: Entity>(_ type: E.Type) -> (any StoredFieldsDecodable.Type)? {
        let key = ObjectIdentifier(type)
        if let last = lastDecodedType, last.type == key { return last.direct }
        let direct = type as? any StoredFieldsDecodable.Type
        lastDecodedType = (key, direct)
        return direct
    }

    /// `D`'s stored-fields initializer, for `E`, which is `D`. (Reinterpreted rather than cast:
    /// a cast to an unspecialized type is a run-time type check per record.)
    private static func decode<D: StoredFieldsDecodable, E>(_ direct: D.Type, as type: E.Type, from record: inout StoredRecord) throws -> E {
        try withUnsafeMutablePointer(to: &record) { record in
            unsafeBitCast(try D(storedFields: StoredFields(record: record)), to: E.self)
        }
    }

    /// Decodes stored record bytes into slots by catalog field number, as the write path holds records.
    func decodeValues(_ bytes: UnsafeRawBufferPointer, of entity: inout EntitySchema, id: @autoclosure () -> FieldValue?) throws -> RecordValues {
        try withStoredRecord(bytes, of: &entity, id: id) { [entity] record in
            var values = RecordValues(entity: entity)
            for (i, offset) in record.fieldOffsets.enumerated() where offset >= 0 {
                values.set(try StoredValue(bytes, at: offset).fieldValue(), at: UInt32(i))
            }
            return values
        }
    }

    /// Validates a record's bytes and lends them with the offset of each field's value. A field
    /// number this handle's catalog lacks reloads the catalog once, since another handle or
    /// process may have added the field.
    func withStoredRecord<R>(_ bytes: UnsafeRawBufferPointer, of entity: inout EntitySchema, id: () -> FieldValue?,
                                     _ body: (inout StoredRecord) throws -> R) throws -> R
    {
        var reloaded = false
        while true {
            let names = entity
            do {
                return try Self.withFieldOffsetTable(count: Int(names.catalog.nextFieldID)) { offsets in
                    try locateFields(bytes, of: names, id: id, in: offsets)
                    var record = StoredRecord(bytes: bytes, fieldOffsets: UnsafeBufferPointer(offsets), names: names.fieldTable)
                    return try withExtendedLifetime(names) { try body(&record) }
                }
            } catch let unknown as FieldBeyondCatalog {
                guard !reloaded else {
                    throw FeedstoreError.corruptData(what: "record \(names.name) \(id()?.jsonText ?? "")",
                                                     reason: "field number \(unknown.id) is not in the catalog")
                }
                try reloadSchemaIfNewer()
                entity = try schema.entity(entity.name)
                reloaded = true
            }
        }
    }

    /// A field number the catalog in hand does not know.
    private struct FieldBeyondCatalog: Error { let id: UInt32 }

    /// Validates `bytes` and notes each field's value offset in `offsets`, by field number
    /// (-1 where the record has none). Not generic, so its work costs no type lookups.
    private func locateFields(_ bytes: UnsafeRawBufferPointer, of names: EntitySchema, id: () -> FieldValue?,
                              in offsets: UnsafeMutableBufferPointer<Int>) throws
    {
        offsets.update(repeating: -1)
        var unknown: UInt32?
        do {
            try RecordCodec.validate(bytes) { field, offset in
                if Int(field) < offsets.count, names.fieldTable.name(id: field) != nil { offsets[Int(field)] = offset } else { unknown = unknown ?? field }
            }
        } catch let FeedstoreError.corruptData(_, reason) {
            throw FeedstoreError.corruptData(what: "record \(names.name) \(id()?.jsonText ?? "")", reason: reason)
        }
        if let unknown { throw FieldBeyondCatalog(id: unknown) }
    }

    /// Lends a table of `count` offsets: on the stack for entities of up to 64 fields, in an
    /// array for wider ones.
    private static func withFieldOffsetTable<R>(count: Int, _ body: (UnsafeMutableBufferPointer<Int>) throws -> R) throws -> R {
        guard count <= 64 else {
            var table = [Int](repeating: -1, count: count)
            return try table.withUnsafeMutableBufferPointer { try body($0) }
        }
        // 64 integers in one value, so the table needs no allocation.
        var table = SIMD64<Int>(repeating: -1)
        return try withUnsafeMutableBytes(of: &table) { raw in
            try body(UnsafeMutableBufferPointer(rebasing: raw.bindMemory(to: Int.self)[..<count]))
        }
    }
}
