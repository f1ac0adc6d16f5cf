import Foundation

/// A validated record's bytes and where each top-level field's value starts, by catalog number
/// (-1 for a field the record lacks): what the decoder reads a record's top level through. It
/// lives on the stack of the read that decodes it; decoders refer to it by pointer, so a decoder
/// and its containers are valid only during the `init(from:)` they are passed to.
struct StoredRecord {
    let bytes: UnsafeRawBufferPointer
    let fieldOffsets: UnsafeBufferPointer<Int>
    /// The catalog's names; nil for bytes that are one value rather than a record. Unmanaged:
    /// the reader that made this record holds the table for as long as the record lives, and
    /// counting references once per field read is measurable.
    let names: Unmanaged<FieldNameTable>?
    /// Where the next name lookup starts: just after the last field found.
    var nextPosition = 0
    /// The nested objects opened so far, made on the first.
    var opened: OpenedObjects?
    /// Where the containers of this record's top level are kept across records, if anywhere.
    /// Unmanaged, as ``names`` is: the decode that set it holds them.
    var sharedContainers: Unmanaged<SharedTopLevelContainers>?

    /// No bytes and no fields.
    static var empty: StoredRecord {
        StoredRecord(bytes: UnsafeRawBufferPointer(start: nil, count: 0), fieldOffsets: UnsafeBufferPointer(start: nil, count: 0), names: nil)
    }

    init(bytes: UnsafeRawBufferPointer, fieldOffsets: UnsafeBufferPointer<Int>, names: FieldNameTable?) {
        self.bytes = bytes
        self.fieldOffsets = fieldOffsets
        self.names = names.map { Unmanaged.passUnretained($0) }
    }

    /// The value of the top-level field named `name`, or nil when the record has none.
    mutating func value(named name: String) -> StoredValue? {
        guard let names else { return nil }
        let hint = nextPosition
        return names._withUnsafeGuaranteedRef { table -> StoredValue? in
            guard let position = table.position(named: name, hint: hint) else { return nil }
            nextPosition = position + 1
            let id = Int(table.ids[position])
            guard id < fieldOffsets.count, fieldOffsets[id] >= 0 else { return nil }
            return StoredValue(bytes, at: fieldOffsets[id])
        }
    }

    /// The catalog's names (held by the reader that made this record).
    var nameTable: FieldNameTable? { names?.takeUnretainedValue() }

    /// The names of the fields the record has, in catalog order.
    var fieldNames: [String] {
        guard let names else { return [] }
        return names._withUnsafeGuaranteedRef { table in
            fieldOffsets.indices.compactMap { fieldOffsets[$0] >= 0 ? table.name(id: UInt32($0)) : nil }
        }
    }

    /// Decodes `type` from `bytes`, which hold one value as ``RecordCodec`` encodes it (not
    /// validated: the caller made them).
    static func decode<T: Decodable>(_ type: T.Type, fromValue bytes: UnsafeRawBufferPointer, codingPath: [any CodingKey]) throws -> T {
        var record = StoredRecord(bytes: bytes, fieldOffsets: UnsafeBufferPointer(start: nil, count: 0), names: nil)
        return try withUnsafeMutablePointer(to: &record) { record in
            try StoredDecoder(node: StoredNode(record: record, offset: 0), codingPath: codingPath).decodeValue(type)
        }
    }

    /// Decodes `type` from the top level of `record`.
    static func decode<T: Decodable>(_ type: T.Type, from record: inout StoredRecord) throws -> T {
        try withUnsafeMutablePointer(to: &record) { record in
            try StoredDecoder(node: StoredNode(record: record, offset: StoredNode.top), codingPath: []).decodeValue(type)
        }
    }

    /// A one-byte record holding null, for the decoder of a `super` that is not there; it is
    /// never freed, and nothing writes it.
    nonisolated(unsafe) static let null: UnsafeMutablePointer<StoredRecord> = {
        let byte = UnsafeMutableRawBufferPointer.allocate(byteCount: 1, alignment: 1)
        byte[0] = RecordCodec.Tag.null.rawValue
        let record = UnsafeMutablePointer<StoredRecord>.allocate(capacity: 1)
        record.initialize(to: StoredRecord(bytes: UnsafeRawBufferPointer(byte), fieldOffsets: UnsafeBufferPointer(start: nil, count: 0), names: nil))
        return record
    }()
}

/// The nested objects one decode has opened: their coding paths and members (indexed when
/// large), kept for as long as the decode so that a container holds only numbers and copying
/// one, which the standard library's container box does for every member read, costs nothing.
final class OpenedObjects {
    var codingPaths: [[any CodingKey]] = []
    var members: [StoredMembers] = []
    var indexes: [[String: StoredValue]?] = []
}

/// What the decoder stands on: a value in a record's bytes, or the record's top level, whose
/// members are found through the catalog. Two words, so a decoder (with its coding path) fits
/// in an existential's inline buffer and passing it allocates nothing.
struct StoredNode {
    let record: UnsafeMutablePointer<StoredRecord>
    /// The value's offset in the record, or ``top``.
    let offset: Int

    static let top = -1

    var isTop: Bool { offset == Self.top }
    var value: StoredValue { StoredValue(record.pointee.bytes, at: offset) }

    var kindName: String { isTop ? "object" : value.kindName }
    func scalar() throws -> StoredScalar { isTop ? .other : try value.scalar() }
    func string() throws -> String? { isTop ? nil : try value.string() }
    func rawBytes() throws -> [UInt8]? { isTop ? nil : try value.rawBytes() }

    /// The node of a value inside the same record.
    func node(_ value: StoredValue) -> StoredNode {
        StoredNode(record: record, offset: value.bytes.baseAddress! - record.pointee.bytes.baseAddress!)
    }
}

/// The key of an array element in a coding path.
struct IndexCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
}

/// Decodes any `Decodable` value straight from stored record bytes: no dictionary of named
/// fields and no ``FieldValue`` tree on the way. Scalars are read where they lie, strings and
/// arrays are made once, for the value itself. Integers convert between signed and unsigned
/// when the value fits; dates also read from doubles and UUIDs from strings; anything else that
/// does not match is a `DecodingError` with the coding path. The ``FieldValue`` tree decoder is
/// this one over the tree's encoding, so both follow one set of rules.
struct StoredDecoder: Decoder {
    let node: StoredNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func mismatch(_ expected: String) -> DecodingError { Self.mismatch(expected, node, codingPath) }

    static func mismatch(_ expected: String, _ node: StoredNode, _ codingPath: [any CodingKey]) -> DecodingError {
        .typeMismatch(Any.self, .init(codingPath: codingPath, debugDescription: "expected \(expected), found \(node.kindName)"))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if node.isTop, let shared = node.record.pointee.sharedContainers {
            return try shared._withUnsafeGuaranteedRef { shared in
                try shared.container(keyedBy: type) { try makeContainer(keyedBy: type) }
            }
        }
        return try makeContainer(keyedBy: type)
    }

    private func makeContainer<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(StoredKeyedContainer<Key>(reader: try StoredMembersReader(node: node, codingPath: codingPath)))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard !node.isTop, let items = try node.value.items() else { throw mismatch("array") }
        return StoredUnkeyedContainer(node: node, items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    /// The types with a stored kind of their own are read as that kind; others decode themselves.
    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if Self.isSpecial(type) { return try Self.special(type, node, codingPath) }
        return try T(from: self)
    }
}

// The rules for each kind of value, shared by the single-value container and the containers'
// members. A member's coding path is made only for an error, so reading a field allocates nothing.
extension StoredDecoder {
    /// Whether `type` has a stored kind of its own: dates, UUIDs, data and URLs.
    @inline(__always)
    static func isSpecial<T>(_ type: T.Type) -> Bool {
        T.self == Date.self || T.self == UUID.self || T.self == Data.self || T.self == URL.self
    }

    /// `type`, one of the ``isSpecial(_:)`` types, read as its own stored kind. (Not an optional
    /// result: an optional of an unspecialized type costs a type lookup per call. And `T` is
    /// known to be the type made, so the value is reinterpreted rather than cast: a cast from a
    /// concrete type to an unspecialized one is a run-time type check per value.)
    static func special<T>(_ type: T.Type, _ node: StoredNode, _ path: @autoclosure () -> [any CodingKey]) throws -> T {
        if T.self == Date.self {
            switch try node.scalar() {
            case let .date(d): return unsafeBitCast(d, to: T.self)
            case let .double(d): return unsafeBitCast(Date(timeIntervalSinceReferenceDate: d), to: T.self)
            default: throw mismatch("date", node, path())
            }
        }
        if T.self == UUID.self {
            if case let .uuid(u) = try node.scalar() { return unsafeBitCast(u, to: T.self) }
            if let s = try node.string(), let u = UUID(uuidString: s) { return unsafeBitCast(u, to: T.self) }
            throw mismatch("uuid", node, path())
        }
        if T.self == Data.self {
            guard let b = try node.rawBytes() else { throw mismatch("bytes", node, path()) }
            return unsafeBitCast(Data(b), to: T.self)
        }
        guard let s = try node.string(), let url = URL(string: s) else { throw mismatch("URL string", node, path()) }
        return unsafeBitCast(url, to: T.self)
    }

    @inline(__always)
    static func integer<T: FixedWidthInteger>(_ type: T.Type, _ node: StoredNode, _ path: @autoclosure () -> [any CodingKey]) throws -> T {
        let value: FieldValue
        switch try node.scalar() {
        case let .int(i):
            if let result = T(exactly: i) { return result }
            value = .int(i)
        case let .uint(u):
            if let result = T(exactly: u) { return result }
            value = .uint(u)
        default: throw mismatch("\(T.self)", node, path())
        }
        throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "\(value) does not fit \(T.self)"))
    }

    @inline(__always)
    static func bool(_ node: StoredNode, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        guard case let .bool(b) = try node.scalar() else { throw mismatch("bool", node, path()) }
        return b
    }

    @inline(__always)
    static func string(_ node: StoredNode, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard let s = try node.string() else { throw mismatch("string", node, path()) }
        return s
    }

    @inline(__always)
    static func double(_ node: StoredNode, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch try node.scalar() {
        case let .double(d): return d
        case let .int(i): return Double(i)
        case let .uint(u): return Double(u)
        default: throw mismatch("double", node, path())
        }
    }
}

extension StoredDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { if case .null? = try? node.scalar() { true } else { false } }
    func decode(_ type: Bool.Type) throws -> Bool { try Self.bool(node, codingPath) }
    func decode(_ type: String.Type) throws -> String { try Self.string(node, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try Self.double(node, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try Self.double(node, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try Self.integer(type, node, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Self.integer(type, node, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Self.integer(type, node, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Self.integer(type, node, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Self.integer(type, node, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try Self.integer(type, node, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Self.integer(type, node, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Self.integer(type, node, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Self.integer(type, node, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Self.integer(type, node, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(type) }
}

private extension Dictionary where Key == String, Value == StoredValue {
    /// An object's members by key, for objects too large to scan at every lookup.
    init(indexing members: StoredMembers) throws {
        self.init(minimumCapacity: members.count)
        var members = members
        while let (key, value) = try members.next() { self[String(decoding: key, as: UTF8.self)] = value }
    }
}

/// The members of an object, or of a record's top level, by key: a keyed container whose work
/// is done by ``StoredMembersReader``, which is not generic, so that the code run per field is
/// compiled for its types and not through the coding key's metadata.
private struct StoredKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let reader: StoredMembersReader

    var codingPath: [any CodingKey] { reader.codingPath }
    var allKeys: [Key] { reader.keys().compactMap { Key(stringValue: $0) } }
    func contains(_ key: Key) -> Bool { (try? reader.member(named: key.stringValue)) != nil }
    func decodeNil(forKey key: Key) throws -> Bool { try reader.isNil(key.stringValue) }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try reader.bool(key.stringValue, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try reader.string(key.stringValue, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try reader.double(key.stringValue, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { Float(try reader.double(key.stringValue, key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try reader.integer(type, key.stringValue, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try reader.integer(type, key.stringValue, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try reader.integer(type, key.stringValue, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try reader.integer(type, key.stringValue, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try reader.integer(type, key.stringValue, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try reader.integer(type, key.stringValue, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try reader.integer(type, key.stringValue, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try reader.integer(type, key.stringValue, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try reader.integer(type, key.stringValue, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try reader.integer(type, key.stringValue, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try reader.value(type, key.stringValue, key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try reader.decoder(key.stringValue, key).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try reader.decoder(key.stringValue, key).unkeyedContainer()
    }
    func superDecoder() throws -> any Decoder { try reader.superDecoder() }
    func superDecoder(forKey key: Key) throws -> any Decoder { try reader.decoder(key.stringValue, key) }
}

/// Finds and reads the members of a record's top level or of an object. Only numbers: the
/// record's pointer, the node's offset and, for an object, its place among the record's
/// ``OpenedObjects``.
private struct StoredMembersReader {
    /// Objects with more members than this are indexed once rather than scanned per lookup.
    static let scannedMembers = 16

    let node: StoredNode
    /// The object's place in ``StoredRecord/opened``; -1 for the record's top level.
    private let object: Int

    /// The reader of the record's top level or of the object at `node`.
    init(node: StoredNode, codingPath: [any CodingKey]) throws {
        self.node = node
        if node.isTop {
            object = -1
            return
        }
        guard let members = try node.value.members() else { throw StoredDecoder.mismatch("object", node, codingPath) }
        let opened = node.record.pointee.opened ?? OpenedObjects()
        node.record.pointee.opened = opened
        object = opened.members.count
        opened.codingPaths.append(codingPath)
        opened.members.append(members)
        opened.indexes.append(members.count > Self.scannedMembers ? try Dictionary(indexing: members) : nil)
    }

    var codingPath: [any CodingKey] { object < 0 ? [] : node.record.pointee.opened!.codingPaths[object] }

    func member(named name: String) throws -> StoredValue? {
        if object < 0 { return node.record.pointee.value(named: name) }
        let opened = node.record.pointee.opened!
        if let index = opened.indexes[object] { return index[name] }
        return try opened.members[object].value(forKey: name)
    }

    /// The keys, sorted as strings sort: the order a type that walks `allKeys` (a dictionary,
    /// say) meets them in, and so which bad member it reports first, does not depend on how
    /// the record was written.
    func keys() -> [String] {
        if object < 0 { return node.record.pointee.fieldNames.sorted() }
        return ((try? node.record.pointee.opened!.members[object].keys()) ?? []).sorted()
    }

    func isNil(_ name: String) throws -> Bool {
        guard let value = try member(named: name) else { return true }
        if case .null = try value.scalar() { return true }
        return false
    }

    /// The member's node; a missing member is an error.
    @inline(__always)
    private func child(_ name: String, _ key: () -> any CodingKey) throws -> StoredNode {
        guard let value = try member(named: name) else {
            throw DecodingError.keyNotFound(key(), .init(codingPath: codingPath, debugDescription: "missing field \(name)"))
        }
        return node.node(value)
    }

    // Each takes the key's name and, for errors and nested coding paths only, the key itself.

    func decoder(_ name: String, _ key: @autoclosure () -> any CodingKey) throws -> StoredDecoder {
        StoredDecoder(node: try child(name, key), codingPath: codingPath + [key()])
    }

    func bool(_ name: String, _ key: @autoclosure () -> any CodingKey) throws -> Bool {
        try StoredDecoder.bool(try child(name, key), codingPath + [key()])
    }

    func string(_ name: String, _ key: @autoclosure () -> any CodingKey) throws -> String {
        try StoredDecoder.string(try child(name, key), codingPath + [key()])
    }

    func double(_ name: String, _ key: @autoclosure () -> any CodingKey) throws -> Double {
        try StoredDecoder.double(try child(name, key), codingPath + [key()])
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type, _ name: String, _ key: @autoclosure () -> any CodingKey) throws -> T {
        try StoredDecoder.integer(type, try child(name, key), codingPath + [key()])
    }

    func value<T: Decodable>(_ type: T.Type, _ name: String, _ key: @autoclosure () -> any CodingKey) throws -> T {
        let child = try child(name, key)
        if StoredDecoder.isSpecial(type) { return try StoredDecoder.special(type, child, codingPath + [key()]) }
        return try T(from: StoredDecoder(node: child, codingPath: codingPath + [key()]))
    }

    func superDecoder() throws -> any Decoder {
        guard let value = try member(named: "super") else {
            return StoredDecoder(node: StoredNode(record: StoredRecord.null, offset: 0), codingPath: codingPath)
        }
        return StoredDecoder(node: node.node(value), codingPath: codingPath)
    }
}

/// The elements of an array, in order.
private struct StoredUnkeyedContainer: UnkeyedDecodingContainer {
    let node: StoredNode
    var items: StoredItems
    let codingPath: [any CodingKey]
    let count: Int?
    var currentIndex = 0

    init(node: StoredNode, items: StoredItems, codingPath: [any CodingKey]) {
        self.node = node
        self.items = items
        self.codingPath = codingPath
        count = items.remaining
    }

    var isAtEnd: Bool { items.remaining == 0 }

    /// The next element's node and index, moving past it.
    private mutating func nextNode() throws -> (node: StoredNode, index: Int) {
        guard let item = try items.next() else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "array ended"))
        }
        defer { currentIndex += 1 }
        return (node.node(item), currentIndex)
    }

    private func path(_ index: Int) -> [any CodingKey] { codingPath + [IndexCodingKey(intValue: index)] }

    private mutating func next() throws -> StoredDecoder {
        let (node, index) = try nextNode()
        return StoredDecoder(node: node, codingPath: path(index))
    }

    private mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let (node, index) = try nextNode()
        return try StoredDecoder.integer(type, node, path(index))
    }

    mutating func decodeNil() throws -> Bool {
        guard let item = items.current, case .null = try item.scalar() else { return false }
        _ = try items.next()
        currentIndex += 1
        return true
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let (node, index) = try nextNode()
        return try StoredDecoder.bool(node, path(index))
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let (node, index) = try nextNode()
        return try StoredDecoder.string(node, path(index))
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let (node, index) = try nextNode()
        return try StoredDecoder.double(node, path(index))
    }
    mutating func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (node, index) = try nextNode()
        if StoredDecoder.isSpecial(type) { return try StoredDecoder.special(type, node, path(index)) }
        return try T(from: StoredDecoder(node: node, codingPath: path(index)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}
