import Foundation

/// The store's persisted description of itself: format version, entities, their fields (names and
/// kinds, learned as records are written) and indexes. Tools read records through it without the
/// application's Swift types. Stored as JSON in the store's meta database.
public struct Catalog: Sendable, Codable, Equatable {
    /// The newest format this library reads and writes. Format 3 gives every store an identifier
    /// and lets journal entries carry the record after the change; format 4 adds text indexes
    /// (which a library of format 3 would misread as indexes of a field). Each reads the formats
    /// before it as they are.
    public static let currentFormatVersion: UInt32 = 4

    /// The format the store was written in.
    public var formatVersion: UInt32
    /// Bumped by every catalog change, so other handles know to reload it.
    public var version: UInt64
    /// The entities by name.
    public var entities: [String: CatalogEntity]
    var nextEntityID: UInt32
    var nextIndexID: UInt32

    init() {
        formatVersion = Self.currentFormatVersion
        version = 0
        entities = [:]
        nextEntityID = 1
        nextIndexID = 1
    }

    /// Entities in a stable order (by name), for tools.
    public var sortedEntities: [CatalogEntity] { entities.values.sorted { $0.name < $1.name } }

    static func decode(_ bytes: [UInt8]) throws -> Catalog {
        do {
            return try JSONDecoder().decode(Catalog.self, from: Data(bytes))
        } catch {
            throw FeedstoreError.corruptData(what: "catalog", reason: "\(error)")
        }
    }

    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding plain structs of strings and numbers cannot fail.
        return [UInt8](try! encoder.encode(self))
    }
}

/// One entity in the catalog.
public struct CatalogEntity: Sendable, Codable, Equatable {
    /// The name (of the entity or field).
    public var name: String
    /// The catalog number, used in place of the name in records and the journal.
    public var id: UInt32
    /// The kind of the primary key ("int", "uint", "string", "uuid").
    public var primaryKeyKind: String
    /// The fields seen in written records, in the order first seen.
    public var fields: [CatalogField]
    /// The secondary indexes.
    public var indexes: [CatalogIndex]
    /// The fields the entity's Swift type declares (dotted for nested fields; `"tags.*"` for a
    /// field whose members are not fixed), as learned when the store last opened with the type;
    /// nil when they could not all be learned.
    public var declaredFields: [String]?
    /// The kind the entity's Swift type reads each declared field as (`"int"`, `"date"`,
    /// `"object"`, `"any"`), with a trailing `"?"` where the field may be absent or null: what
    /// writes by name and `verify` hold records to. Empty when the type declared its fields by
    /// name only (``Entity/fieldNames``); nil when they could not be learned, or the store was
    /// never opened with the type (or by a version that recorded them).
    public var declaredKinds: [String: String]?
    var nextFieldID: UInt32

    /// The LMDB database holding the records, keyed by encoded primary key.
    public var recordsDatabaseName: String { "records:\(name)" }

    /// The field with this name, if any.
    public func field(named name: String) -> CatalogField? { fields.first { $0.name == name } }
    /// The field with this catalog number, if any.
    public func field(id: UInt32) -> CatalogField? { fields.first { $0.id == id } }
    /// The index with this name, if any.
    public func index(named name: String) -> CatalogIndex? { indexes.first { $0.definition.name == name } }

    /// Checks that `name` (plain or dotted) is a field of the entity: one its type declares or one
    /// a written record holds. Throws ``FeedstoreError/unknownField(entity:field:usedBy:fields:)``
    /// naming `usedBy`. When the type's fields could not be learned (``declaredFields`` is nil),
    /// every name is accepted.
    public func checkField(_ name: String, usedBy: String) throws {
        guard let declaredFields else { return }
        let declared = DeclaredFields(stored: declaredFields)
        if declared.contains(name) || field(named: name) != nil { return }
        let known = Set(declared.topLevel).union(fields.map(\.name)).sorted()
        throw FeedstoreError.unknownField(entity: self.name, field: name, usedBy: usedBy, fields: known)
    }
}

/// One top-level field of an entity, as first written.
public struct CatalogField: Sendable, Codable, Equatable {
    /// The catalog number, used in place of the name in records and the journal.
    public var id: UInt32
    /// The name (of the entity or field).
    public var name: String
    /// The ``FieldValue`` kind seen for this field, or "mixed" once several kinds were seen.
    public var kind: String

    /// Whether `value` is of the kind recorded (null always is).
    func accepts(_ value: FieldValue) -> Bool { FieldSlot(self).accepts(value) }
}

/// One secondary index in the catalog.
public struct CatalogIndex: Sendable, Codable, Equatable {
    /// The catalog number, used in place of the name in records and the journal.
    public var id: UInt32
    /// The entity the index belongs to.
    public var entity: String
    /// The index as declared.
    public var definition: IndexDefinition

    /// The LMDB database holding the entries: key = components + primary key, value empty.
    public var databaseName: String { "index:\(entity).\(definition.name)" }
    /// The LMDB database holding the index's counts (its counted B-tree of fence keys).
    public var countsDatabaseName: String { "counts:\(entity).\(definition.name)" }
}
