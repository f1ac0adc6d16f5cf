/// An entity's catalog entry resolved for use: database handles and field lookups.
final class EntitySchema: Sendable {
    let catalog: CatalogEntity
    let records: LMDBDatabase
    let indexes: [IndexSchema]
    /// The catalog's field names and numbers, looked up both ways at the cost reads and writes
    /// pay per field.
    let fieldTable: FieldNameTable
    /// What the write path needs of each field, in catalog order (the table's positions).
    private let slots: [FieldSlot]
    /// What records written by field name are held to; nil when nothing is known.
    let shape: RecordShape?

    var name: String { catalog.name }

    init(catalog: CatalogEntity, records: LMDBDatabase, indexes: [IndexSchema]) {
        self.catalog = catalog
        self.records = records
        self.indexes = indexes
        fieldTable = FieldNameTable(catalog.fields.map { ($0.id, $0.name) })
        slots = catalog.fields.map(FieldSlot.init)
        shape = RecordShape(catalog)
    }

    /// The slot of the field named `name`.
    func slot(named name: String) -> FieldSlot? {
        fieldTable.position(named: name).map { slots[$0] }
    }

    func index(named name: String) throws -> IndexSchema {
        guard let index = indexes.first(where: { $0.definition.name == name }) else {
            throw catalog.unknownIndex(name)
        }
        return index
    }
}

/// What the write path needs of a field: its catalog number and the kind its values must have.
struct FieldSlot: Sendable {
    let id: UInt32
    /// The ``FieldValue/kindRank`` of the one kind the field has held, or nil once it is "mixed"
    /// (-1, which no value has, for a kind name the catalog never writes).
    let kindRank: Int?

    init(_ field: CatalogField) {
        id = field.id
        kindRank = field.kind == "mixed" ? nil : FieldValue.kindRank(ofKindName: field.kind) ?? -1
    }

    /// Whether storing `value` keeps the field's kind (null always does).
    func accepts(_ value: FieldValue) -> Bool {
        if case .null = value { return true }
        return kindRank.map { $0 == value.kindRank } ?? true
    }
}

/// A secondary index resolved for use.
final class IndexSchema: Sendable {
    let catalog: CatalogIndex
    let database: LMDBDatabase
    /// The database of the index's order statistics (read through ``counted``, in the storage layer).
    let counts: LMDBDatabase
    /// Every top-level field the index reads (components and condition), to skip unaffected indexes.
    let fieldsRead: Set<String>
    /// The component fields, parsed once.
    let componentPaths: [FieldPath]
    /// Per component: the catalog number of its field when it is a top-level field of the
    /// entity's catalog, so that keys of records held by number skip the lookup by name (field
    /// numbers are never reused, so a number stays right in later catalogs); nil otherwise.
    private let componentFieldIDs: [UInt32?]
    /// Copied out of the definition, which building a key would otherwise copy whole each time.
    private let componentDescending: [Bool]
    /// Per component: the ``FieldValue/kindRank`` of the one kind its keys hold
    /// (``CatalogEntity/keyKind(ofField:)``), or nil when that is not one kind.
    let componentKindRanks: [Int?]
    private let condition: IndexCondition?
    /// A text index's word fields, parsed once; nil for an index of field values.
    private let wordPaths: [FieldPath]?

    var definition: IndexDefinition { catalog.definition }
    var id: UInt32 { catalog.id }

    /// `entity`'s catalog fields resolve the components' field numbers, and its kinds the
    /// components' kinds.
    init(catalog: CatalogIndex, of entity: CatalogEntity, database: LMDBDatabase, counts: LMDBDatabase) {
        self.catalog = catalog
        self.database = database
        self.counts = counts
        let components = catalog.definition.components
        componentPaths = components.map { FieldPath($0.field) }
        componentFieldIDs = componentPaths.map { path in
            path.rest.isEmpty ? entity.fields.first { $0.name == path.head }?.id : nil
        }
        componentKindRanks = components.map { entity.keyKind(ofField: $0.field).flatMap(FieldValue.kindRank(ofKindName:)) }
        componentDescending = components.map(\.descending)
        condition = catalog.definition.condition
        wordPaths = catalog.definition.words?.map(FieldPath.init)
        fieldsRead = Set(catalog.definition.keyFields.map { FieldPath($0).head } + (condition?.fields ?? []).map { FieldPath($0).head })
    }

    /// Whether the index holds words (``IndexDefinition/text(_:fields:order:where:)``).
    var isText: Bool { wordPaths != nil }

    /// Whether a record with these fields belongs in the index.
    func contains(_ fields: some TopLevelFields) -> Bool {
        condition?.holds { FieldPath.value(of: $0, in: fields) } ?? true
    }

    // MARK: The index's options: which entries it admits

    /// The components that no two of the index's entries may share: an entry's, when the index
    /// is unique and none of them is null (nulls never collide, as in SQL); nil when the entry
    /// may share them. Writes, index builds and `verify` all decide uniqueness through this, and
    /// membership (a partial index's condition) through ``key(of:primaryKey:)``.
    /// (`components` is read only for a unique index.)
    func uniqueKey(_ components: @autoclosure () -> [FieldValue]) -> [FieldValue]? {
        guard definition.unique else { return nil }
        let components = components()
        return components.contains(.null) ? nil : components
    }

    /// The refusal of an entry whose unique key (``uniqueKey(_:)``) the entry of the record
    /// `holder` (its encoded primary key) already holds.
    func violation(of key: [FieldValue], heldBy holder: [UInt8]) -> FeedstoreError {
        .uniqueViolation(entity: catalog.entity, index: definition.name, key: key,
                         existingID: (try? KeyDecoder.decode(holder).first?.value) ?? .null)
    }

    /// The component values of a record.
    func components(of fields: some TopLevelFields) -> [FieldValue] {
        componentPaths.indices.map { componentValue($0, in: fields) }
    }

    private func componentValue(_ i: Int, in fields: some TopLevelFields) -> FieldValue {
        componentFieldIDs[i].flatMap(fields.value(ofFieldID:)) ?? componentPaths[i].value(in: fields)
    }

    /// The entry key of a record (components then primary key), or nil when it is not a member.
    /// A text index has several (``keys(of:primaryKey:)``); this is its empty word's entry.
    func key(of fields: some TopLevelFields, primaryKey: [UInt8]) throws -> [UInt8]? {
        guard contains(fields) else { return nil }
        if isText { return try keys(of: fields, primaryKey: primaryKey).first }
        return try valueKey(of: fields, primaryKey: primaryKey, from: 0)
    }

    /// Every entry key of a record, in key order: none or one for an index of values; for a text
    /// index, one per distinct word of its fields, after the empty word's, which every member has.
    func keys(of fields: some TopLevelFields, primaryKey: [UInt8]) throws -> [[UInt8]] {
        guard contains(fields) else { return [] }
        guard let wordPaths else { return [try valueKey(of: fields, primaryKey: primaryKey, from: 0)] }
        let suffix = try valueKey(of: fields, primaryKey: primaryKey, from: 1)
        var words = Set<String>()
        for path in wordPaths {
            if case let .string(text) = path.value(in: fields) { TextWords.forEachWord(in: text) { words.insert($0) } }
        }
        return ([""] + words.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }).map { word in
            var key = Self.wordKey(word)
            key.append(contentsOf: suffix)
            return key
        }
    }

    /// The leading component of a text index's entries for `word` (folded): a range prefix.
    static func wordKey(_ word: String) -> [UInt8] {
        (try? KeyEncoding.encode([.string(word)])) ?? []
    }

    /// Components from `first` on, then the primary key.
    private func valueKey(of fields: some TopLevelFields, primaryKey: [UInt8], from first: Int) throws -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(32 + primaryKey.count)
        for i in componentDescending.indices.dropFirst(first) {
            let value = componentValue(i, in: fields)
            do {
                try KeyEncoding.append(value, descending: componentDescending[i], to: &key)
            } catch {
                throw FeedstoreError.invalidIndexDefinition(
                    entity: catalog.entity, index: definition.name,
                    reason: "field \(definition.components[i].field) holds a \(value.kindName), which cannot be a key component")
            }
        }
        key.append(contentsOf: primaryKey)
        return key
    }

    /// Encodes leading component values, following each component's direction.
    func encodePrefix(_ values: [FieldValue]) throws -> [UInt8] {
        guard values.count <= definition.components.count else {
            throw FeedstoreError.invalidRange(entity: catalog.entity, index: definition.name,
                                              reason: "\(values.count) components; the index has \(definition.components.count)")
        }
        do {
            return try KeyEncoding.encode(values, descending: definition.components.map(\.descending))
        } catch {
            throw FeedstoreError.invalidRange(entity: catalog.entity, index: definition.name, reason: "an array or object cannot be a key component")
        }
    }
}

/// The catalog with every database handle it names: what transactions read through.
struct SchemaSnapshot: Sendable {
    let catalog: Catalog
    let entities: [String: EntitySchema]

    func entity(_ name: String) throws -> EntitySchema {
        guard let entity = entities[name] else { throw FeedstoreError.unknownEntity(name, entities: entities.keys.sorted()) }
        return entity
    }
}
