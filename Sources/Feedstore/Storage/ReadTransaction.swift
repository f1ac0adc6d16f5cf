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

    /// Lends the transaction for reading `index`'s counts. A write transaction first applies
    /// the count changes it deferred.
    func accessCounts<R>(of index: IndexSchema, _ body: (borrowing LMDBTransaction) throws -> R) throws -> R {
        try applyDeferredCounts(of: index)
        return try access(body)
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
    }

    /// Decodes stored record bytes into named fields.
    func decodeFields(_ bytes: UnsafeRawBufferPointer, of entity: inout EntitySchema, id: FieldValue?) throws -> [String: FieldValue] {
        // Decoded first: a field number new to this handle reloads `entity`.
        let fields = try decodeRecord(bytes, of: &entity, id: id)
        return entity.named(fields)
    }

    /// Decodes stored record bytes straight into `E`, with no dictionary of named fields on the
    /// way (``RecordFieldsDecoder``).
    func decodeEntity<E: Entity>(_ type: E.Type, _ bytes: UnsafeRawBufferPointer, of entity: inout EntitySchema, id: FieldValue) throws -> E {
        let fields = try decodeRecord(bytes, of: &entity, id: id)
        do {
            return try RecordFieldsDecoder.decode(E.self, from: fields, of: entity)
        } catch {
            throw FeedstoreError.decodingFailed(entity: E.entityName, id: id, reason: "\(error)")
        }
    }

    /// Decodes stored record bytes into slots by catalog field number, as the write path holds records.
    func decodeValues(_ bytes: UnsafeRawBufferPointer, of entity: inout EntitySchema, id: FieldValue?) throws -> RecordValues {
        let fields = try decodeRecord(bytes, of: &entity, id: id)
        var record = RecordValues(entity: entity)
        for field in fields { record.set(field.value, at: field.id) }
        return record
    }

    /// The record's fields, each checked to be in the catalog; a number this handle's catalog
    /// lacks reloads it once, since another handle or process may have added the field.
    private func decodeRecord(_ bytes: UnsafeRawBufferPointer, of entity: inout EntitySchema, id: FieldValue?) throws -> [RecordField] {
        let fields: [RecordField]
        do {
            fields = try RecordCodec.decode(bytes)
        } catch let FeedstoreError.corruptData(_, reason) {
            throw FeedstoreError.corruptData(what: "record \(entity.name) \(id?.jsonText ?? "")", reason: reason)
        }
        for field in fields where entity.fieldNames[field.id] == nil {
            try reloadSchemaIfNewer()
            entity = try schema.entity(entity.name)
            guard entity.fieldNames[field.id] != nil else {
                throw FeedstoreError.corruptData(what: "record \(entity.name) \(id?.jsonText ?? "")",
                                                 reason: "field number \(field.id) is not in the catalog")
            }
        }
        return fields
    }
}
