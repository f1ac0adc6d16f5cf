import Foundation

/// Every failure Feedstore reports. Each message says what failed and where (store path, entity,
/// index, key), and no failing operation leaves partial writes behind.
public enum FeedstoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// LMDB returned an error not covered by a more specific case.
    case lmdb(LMDBError, path: String)
    /// The path exists but does not hold a Feedstore store (or is damaged beyond opening).
    case notAStore(path: String, reason: String)
    /// The store was written by a newer Feedstore whose format this library cannot read.
    case formatVersionTooNew(path: String, found: UInt32, supported: UInt32)
    /// The store was written in an older format, which opening it for writing upgrades; a
    /// read-only opening cannot.
    case formatUpgradeNeeded(path: String, found: UInt32, current: UInt32)
    /// The store (or handle) was closed.
    case storeClosed(path: String)
    /// The store is suspended in this process (``Store/suspend()``): it holds no lock on its
    /// files, and reads and writes wait for ``Store/resume()``.
    case storeSuspended(path: String)
    /// The store could not be suspended or resumed; `reason` says why and what to do.
    case suspensionRefused(path: String, reason: String)
    /// The page structure of the store's LMDB file is damaged (found by
    /// ``StoreOptions/verifyPagesOnOpen`` or ``Store/verify(progress:)``): `problems` names each
    /// damaged page and what is wrong with it.
    case damagedFile(path: String, problems: [String])
    /// A write was attempted on a store open read-only; `reason` says why it is (opened so, or
    /// its files or file system are not writable).
    case readOnly(path: String, reason: String)
    /// This user may not open the store at all; `reason` names the file and what to change.
    case accessDenied(path: String, reason: String)
    /// A transaction was used after its closure returned.
    case transactionEnded
    /// `write` was called from inside a write transaction.
    case nestedWrite
    /// An encoded key exceeds LMDB's key size limit; nothing was written.
    case keyTooLarge(entity: String, index: String?, size: Int, limit: Int)
    /// A unique index already holds the key for another record; the transaction was rolled back.
    case uniqueViolation(entity: String, index: String, key: [FieldValue], existingID: FieldValue)
    /// `insert` found a record with the same primary key.
    case recordExists(entity: String, id: FieldValue)
    /// `update` found no record with that primary key.
    case recordNotFound(entity: String, id: FieldValue)
    /// Stored bytes (record, key, catalog, journal entry) could not be decoded.
    case corruptData(what: String, reason: String)
    /// A Swift value could not be encoded as a record.
    case encodingFailed(entity: String, reason: String)
    /// A stored record could not be decoded into the requested Swift type.
    case decodingFailed(entity: String, id: FieldValue?, reason: String)
    /// No entity with this name is registered in the store's catalog.
    case unknownEntity(String, entities: [String])
    /// A record written by field name (``WriteTransaction/put(entity:id:fields:keepingUndeclaredFields:)``,
    /// `storectl load`, a replica's apply) that its entity's type could not read back: a value
    /// of another kind, a required field missing, or a field the type does not declare. Nothing
    /// of the transaction is written.
    case recordRefused(entity: String, id: FieldValue, field: String, reason: FieldRefusal)
    /// A write's precondition (``RecordWrite/Precondition``) did not hold: the record was
    /// present where it had to be absent, or not equal to the value expected. Nothing of the
    /// transaction is written.
    case preconditionFailed(entity: String, id: FieldValue, reason: String)
    /// The entity has no index with this name; `indexes` lists the ones it has.
    case unknownIndex(entity: String, index: String, indexes: [String])
    /// A name used by `usedBy` (an index, its condition, a watcher's options) is not a field of the
    /// entity; `fields` lists the entity's fields.
    case unknownField(entity: String, field: String, usedBy: String, fields: [String])
    /// A key path used by `usedBy` reads no stored field of the entity (a computed property, or
    /// a value its decoding does not read); `reason` says what was found.
    case unknownKeyPath(entity: String, keyPath: String, usedBy: String, reason: String)
    /// An index declaration cannot be used as written.
    case invalidIndexDefinition(entity: String, index: String, reason: String)
    /// A record migration cannot go on; its progress stays at the last step that committed.
    case migrationFailed(entity: String, name: String, reason: String)
    /// A query range cannot be evaluated as written.
    case invalidRange(entity: String, index: String, reason: String)
    /// A query's filter cannot be evaluated as written: a constant of the wrong kind for its
    /// field, a text test on a field that is not text.
    case invalidFilter(entity: String, reason: String)
    /// The journal no longer holds the entries after `requested`: retention trimmed them.
    case journalBehindRetention(requested: UInt64, firstRetained: UInt64)
    /// The map reached the configured maximum size.
    case mapFull(path: String, limit: Int)
    /// The file system is full; the store is unchanged and still readable.
    case diskFull(path: String)
    /// Another handle in this process has the store open in an incompatible mode.
    case incompatibleHandle(path: String, reason: String)
    /// This handle's declaration would drop or rebuild an index that another open handle of the
    /// store (in this process or another) declares; `holder` names that handle.
    case indexInUse(entity: String, index: String, holder: String)
    /// A copy's destination exists and may not be replaced.
    case destinationExists(path: String, reason: String)
    /// The machine went down while a process wrote the store through its commit log, and this
    /// process may not write the store to recover it (``StoreOptions/keepsCommitLog``). Opening
    /// it once by a user who may write it recovers it.
    case needsRecovery(path: String, reason: String)
    /// The commit log failed (``StoreOptions/keepsCommitLog``): it could not be read, written or
    /// synced, nor LMDB's file synced in its place.
    case commitLogFailed(path: String, reason: String)

    /// A one-line message naming what failed and where.
    public var description: String {
        switch self {
        case let .lmdb(error, path): "\(error) (store \(path))"
        case let .notAStore(path, reason): "\(path) is not a Feedstore store: \(reason)"
        case let .destinationExists(path, reason): "cannot copy the store to \(path): \(reason)"
        case let .needsRecovery(path, reason): "store \(path) must be recovered before it can be read: \(reason)"
        case let .commitLogFailed(path, reason): "the commit log of store \(path) failed: \(reason)"
        case let .formatVersionTooNew(path, found, supported):
            "store \(path) has format version \(found); this library reads versions up to \(supported)"
        case let .formatUpgradeNeeded(path, found, current):
            "store \(path) has format version \(found); open it once for writing (`storectl upgrade \(path)`) to upgrade it to version \(current)"
        case let .storeClosed(path): "store \(path) is closed"
        case let .storeSuspended(path):
            "store \(path) is suspended in this process (Store.suspend()) and holds no lock on its files; call resume() before "
                + "reading or writing it"
        case let .suspensionRefused(path, reason): "store \(path) cannot be suspended or resumed: \(reason)"
        case let .readOnly(path, reason): "store \(path) is read-only (\(reason)); writes are not allowed"
        case let .accessDenied(path, reason): "cannot open store \(path): \(reason)"
        case let .damagedFile(path, problems):
            "the data file of store \(path) is damaged: \(problems.prefix(3).joined(separator: "; "))"
                + (problems.count > 3 ? " (and \(problems.count - 3) more)" : "")
        case .transactionEnded: "transaction used after its closure returned"
        case .nestedWrite: "write called inside a write transaction; use the transaction you have"
        case let .keyTooLarge(entity, index, size, limit):
            "key of \(entity)\(index.map { ".\($0)" } ?? " primary key") is \(size) bytes; the limit is \(limit)"
        case let .uniqueViolation(entity, index, key, existingID):
            "unique index \(entity).\(index) already holds \(FieldValue.array(key).jsonText) for id \(existingID.jsonText)"
        case let .recordExists(entity, id): "\(entity) \(id.jsonText) already exists"
        case let .recordNotFound(entity, id): "\(entity) \(id.jsonText) not found"
        case let .corruptData(what, reason): "corrupt \(what): \(reason)"
        case let .encodingFailed(entity, reason): "cannot encode \(entity): \(reason)"
        case let .decodingFailed(entity, id, reason):
            "cannot decode \(entity)\(id.map { " \($0.jsonText)" } ?? ""): \(reason)"
        case let .unknownEntity(name, entities):
            "no entity named \(name) in this store" + (entities.isEmpty ? "" : "; its entities are \(entities.joined(separator: ", "))")
        case let .recordRefused(entity, id, field, reason): "\(entity) \(id.jsonText) was refused: \(reason.describing(field: field))"
        case let .preconditionFailed(entity, id, reason): "\(entity) \(id.jsonText) was not written: \(reason)"
        case let .unknownIndex(entity, index, indexes):
            "entity \(entity) has no index named \(index)"
                + (indexes.isEmpty ? "; it has no indexes" : "; its indexes are \(indexes.joined(separator: ", "))")
                + (indexes == [IndexDefinition.primaryKeyOrderName] ? " (the primary-key order every entity has)" : "")
                // An index declared as a static property but left out of `indexes` is the
                // newcomer's usual cause.
                + ". An index is in the store once its entity's `indexes` lists it (`static let indexes = [\(index).definition]`)"
        case let .unknownField(entity, field, usedBy, fields):
            "\(usedBy) names \"\(field)\", which is not a field of \(entity); its fields are "
                + (fields.isEmpty ? "unknown" : fields.joined(separator: ", "))
        case let .unknownKeyPath(entity, keyPath, usedBy, reason):
            "\(usedBy) uses the key path \(keyPath), which is not a stored field of \(entity): \(reason)"
        case let .invalidIndexDefinition(entity, index, reason): "index \(entity).\(index) is invalid: \(reason)"
        case let .migrationFailed(entity, name, reason): "migration \(name) of \(entity) stopped: \(reason)"
        case let .invalidRange(entity, index, reason): "invalid range on \(entity).\(index): \(reason)"
        case let .invalidFilter(entity, reason): "invalid filter on \(entity): \(reason)"
        case let .journalBehindRetention(requested, firstRetained):
            "journal entries after sequence \(requested) were trimmed; the first retained sequence is \(firstRetained)"
        case let .mapFull(path, limit): "store \(path) reached its maximum map size of \(limit) bytes"
        case let .diskFull(path): "no space left on the device holding \(path); nothing was written"
        case let .incompatibleHandle(path, reason): "cannot open \(path) again in this process: \(reason)"
        case let .indexInUse(entity, index, holder):
            "index \(entity).\(index) is declared by another open handle of this store (\(holder)), and this declaration of "
                + "\(entity) would drop or rebuild it; declare the index as that handle does, or close that handle first "
                + "(an index no open handle declares can be dropped or changed)"
        }
    }
}

extension FeedstoreError: LocalizedError {
    /// The same one-line message as ``description``, for `localizedDescription` and alerts.
    public var errorDescription: String? { description }
}
