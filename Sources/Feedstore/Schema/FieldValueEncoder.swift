import Foundation

/// Turns any `Encodable` value into a ``FieldValue`` tree. `Date`, `UUID`, `Data` and `URL` keep
/// their own kinds (date, uuid, bytes, string); every integer type becomes `.int` or `.uint`.
struct FieldValueEncoder {
    static func encode<T: Encodable>(_ value: T) throws -> FieldValue {
        if let special = specialValue(value) { return special }
        let node = EncodingNode()
        try value.encode(to: NodeEncoder(node: node, codingPath: []))
        return node.finish()
    }

    /// Encodes an entity's top-level members straight into the slots of its catalog fields
    /// (``RecordValues``), building no dictionary of named fields. Members the catalog does not
    /// know, or knows with another kind, come back by name for the catalog to learn. Nil when the
    /// value does not encode as a keyed container.
    static func encodeRecord<T: Encodable>(_ value: T, of entity: EntitySchema) throws
        -> (record: RecordValues, unplaced: [String: FieldValue])?
    {
        if specialValue(value) != nil { return nil }
        let node = EncodingNode(slotsOf: entity)
        try value.encode(to: NodeEncoder(node: node, codingPath: []))
        return node.finishRecord()
    }

    /// The value of the types that keep their own kind. It compares types rather than casting
    /// through `Any`: that boxes every value (a heap allocation for a record) and runs four
    /// failing casts per field.
    static func specialValue<T>(_ value: T) -> FieldValue? {
        if T.self == Date.self { return .date(value as! Date) }
        if T.self == UUID.self { return .uuid(value as! UUID) }
        if T.self == Data.self { return .bytes([UInt8](value as! Data)) }
        if T.self == URL.self { return .string((value as! URL).absoluteString) }
        return nil
    }
}

/// A slot in the tree being built; containers write into it in place (scalars of an object go
/// straight into `fields`, so encoding a flat record allocates one node). The top node of a
/// record encoded for storage puts the members its entity knows into `record` by catalog
/// number instead, and keeps only the others in `fields`.
///
/// Its members skip Swift's run-time exclusivity checks, which cost about a fifth of encoding a
/// flat record: a node is private to one encoding on one thread, and no access to a member
/// overlaps another (each method reads or writes a member and returns).
private final class EncodingNode {
    @exclusivity(unchecked) var value: FieldValue?
    @exclusivity(unchecked) var fields: [String: FieldValue]?
    @exclusivity(unchecked) var nested: [String: EncodingNode]?
    @exclusivity(unchecked) var elements: [EncodingNode]?
    /// For a record's top node: the slots of the fields its entity knows.
    @exclusivity(unchecked) var record: RecordValues?
    @exclusivity(unchecked) var isKeyed = false

    init() {}

    init(slotsOf entity: EntitySchema) {
        record = RecordValues(entity: entity)
    }

    func finish() -> FieldValue {
        if fields != nil || nested != nil {
            var object = fields ?? [:]
            for (key, node) in nested ?? [:] { object[key] = node.finish() }
            return .object(object)
        }
        if let elements { return .array(elements.map { $0.finish() }) }
        return value ?? .null
    }

    /// The record's slots and unplaced members, or nil when it did not encode as a keyed container.
    func finishRecord() -> (record: RecordValues, unplaced: [String: FieldValue])? {
        guard isKeyed, value == nil, elements == nil else { return nil }
        for (key, node) in nested ?? [:] { setMember(key, node.finish()) }
        return record.map { ($0, fields ?? [:]) }
    }

    func makeObject() {
        isKeyed = true
        if fields == nil && record == nil { fields = Dictionary(minimumCapacity: 8) }
    }

    func setMember(_ key: String, _ value: FieldValue) {
        nested?[key] = nil
        if let entity = record?.entity {
            // A member written again replaces what it held: a slot is overwritten, or the member
            // is unplaced and overwrites its slot once the catalog has learned it.
            if let field = entity.slot(named: key), field.accepts(value) {
                record!.set(value, at: field.id)
                fields?[key] = nil
                return
            }
            if case .null = value {
                fields?[key] = nil
                return
            }
            if fields == nil { fields = [:] }
        }
        fields![key] = value
    }

    func member(_ key: String) -> EncodingNode {
        if let existing = nested?[key] { return existing }
        let child = EncodingNode()
        if nested == nil { nested = [:] }
        nested![key] = child
        fields?[key] = nil
        return child
    }

    func appendElement() -> EncodingNode {
        let child = EncodingNode()
        if elements == nil { elements = [] }
        elements!.append(child)
        return child
    }

    func set<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws {
        if let special = FieldValueEncoder.specialValue(value) {
            self.value = special
        } else {
            try value.encode(to: NodeEncoder(node: self, codingPath: codingPath))
        }
    }
}

private struct NodeEncoder: Encoder {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.makeObject()
        return KeyedEncodingContainer(KeyedNodeContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if node.elements == nil { node.elements = [] }
        return UnkeyedNodeContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleNodeContainer(node: node, codingPath: codingPath)
    }
}

/// The scalar `encode` methods of the unkeyed and single-value containers, written once.
private protocol ScalarEncoding {
    func put(_ value: FieldValue) throws
}

private extension ScalarEncoding {
    func putInteger<T: BinaryInteger>(_ v: T) throws {
        if T.isSigned { try put(.int(Int64(v))) } else { try put(.uint(UInt64(v))) }
    }

    func encodeNil() throws { try put(.null) }
    func encode(_ value: Bool) throws { try put(.bool(value)) }
    func encode(_ value: String) throws { try put(.string(value)) }
    func encode(_ value: Double) throws { try put(.double(value)) }
    func encode(_ value: Float) throws { try put(.double(Double(value))) }
    func encode(_ value: Int) throws { try putInteger(value) }
    func encode(_ value: Int8) throws { try putInteger(value) }
    func encode(_ value: Int16) throws { try putInteger(value) }
    func encode(_ value: Int32) throws { try putInteger(value) }
    func encode(_ value: Int64) throws { try putInteger(value) }
    func encode(_ value: UInt) throws { try putInteger(value) }
    func encode(_ value: UInt8) throws { try putInteger(value) }
    func encode(_ value: UInt16) throws { try putInteger(value) }
    func encode(_ value: UInt32) throws { try putInteger(value) }
    func encode(_ value: UInt64) throws { try putInteger(value) }
}

private struct KeyedNodeContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    private func set(_ value: FieldValue, _ key: Key) { node.setMember(key.stringValue, value) }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(.double(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(.double(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.uint(value), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if let special = FieldValueEncoder.specialValue(value) {
            node.setMember(key.stringValue, special)
        } else {
            try node.member(key.stringValue).set(value, codingPath: codingPath + [key])
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        NodeEncoder(node: node.member("super"), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedNodeContainer: UnkeyedEncodingContainer, ScalarEncoding {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var count: Int { node.elements?.count ?? 0 }

    func put(_ value: FieldValue) throws { node.appendElement().value = value }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try node.appendElement().set(value, codingPath: codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.appendElement(), codingPath: codingPath).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        NodeEncoder(node: node.appendElement(), codingPath: codingPath).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        NodeEncoder(node: node.appendElement(), codingPath: codingPath)
    }
}

private struct SingleNodeContainer: SingleValueEncodingContainer, ScalarEncoding {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    func put(_ value: FieldValue) throws { node.value = value }

    mutating func encode<T: Encodable>(_ value: T) throws { try node.set(value, codingPath: codingPath) }
}
