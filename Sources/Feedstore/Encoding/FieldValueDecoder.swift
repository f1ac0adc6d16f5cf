import Foundation

/// Builds any `Decodable` value from a ``FieldValue`` tree; the inverse of ``FieldValueEncoder``.
/// Integers convert between `.int` and `.uint` when the value fits; anything else that does not
/// match is a `DecodingError` with the coding path.
struct FieldValueDecoder {
    static func decode<T: Decodable>(_ type: T.Type, from value: FieldValue) throws -> T {
        try NodeDecoder(value: value, codingPath: []).decodeValue(type)
    }

    /// Decodes `value` found at `codingPath` (a record's field, say), as part of a larger value.
    static func decode<T: Decodable>(_ type: T.Type, from value: FieldValue, codingPath: [any CodingKey]) throws -> T {
        try NodeDecoder(value: value, codingPath: codingPath).decodeValue(type)
    }

    /// A decoder over `value` found at `codingPath`.
    static func decoder(for value: FieldValue, codingPath: [any CodingKey]) -> any Decoder {
        NodeDecoder(value: value, codingPath: codingPath)
    }
}

private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
}

private struct NodeDecoder: Decoder {
    let value: FieldValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func mismatch(_ expected: String) -> DecodingError {
        .typeMismatch(Any.self, .init(codingPath: codingPath, debugDescription: "expected \(expected), found \(value.kindName)"))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case let .object(members) = value else { throw mismatch("object") }
        return KeyedDecodingContainer(KeyedNodeDecoder<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case let .array(items) = value else { throw mismatch("array") }
        return UnkeyedNodeDecoder(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        switch type {
        case is Date.Type:
            switch value {
            case let .date(d): return d as! T
            case let .double(d): return Date(timeIntervalSinceReferenceDate: d) as! T
            default: throw mismatch("date")
            }
        case is UUID.Type:
            switch value {
            case let .uuid(u): return u as! T
            case let .string(s): if let u = UUID(uuidString: s) { return u as! T }
            default: break
            }
            throw mismatch("uuid")
        case is Data.Type:
            guard case let .bytes(b) = value else { throw mismatch("bytes") }
            return Data(b) as! T
        case is URL.Type:
            guard case let .string(s) = value, let url = URL(string: s) else { throw mismatch("URL string") }
            return url as! T
        default:
            return try T(from: self)
        }
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let result: T?
        switch value {
        case let .int(i): result = T(exactly: i)
        case let .uint(u): result = T(exactly: u)
        default: throw mismatch("\(T.self)")
        }
        guard let result else {
            throw DecodingError.dataCorrupted(.init(codingPath: codingPath, debugDescription: "\(value) does not fit \(T.self)"))
        }
        return result
    }
}

extension NodeDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { if case .null = value { true } else { false } }
    func decode(_ type: Bool.Type) throws -> Bool {
        guard case let .bool(b) = value else { throw mismatch("bool") }
        return b
    }
    func decode(_ type: String.Type) throws -> String {
        guard case let .string(s) = value else { throw mismatch("string") }
        return s
    }
    func decode(_ type: Double.Type) throws -> Double {
        switch value {
        case let .double(d): return d
        case let .int(i): return Double(i)
        case let .uint(u): return Double(u)
        default: throw mismatch("double")
        }
    }
    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }
    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(type) }
}

private struct KeyedNodeDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: FieldValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }
    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func child(_ key: Key) throws -> NodeDecoder {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing field \(key.stringValue)"))
        }
        return NodeDecoder(value: value, codingPath: codingPath + [key])
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let value = members[key.stringValue] else { return true }
        if case .null = value { return true }
        return false
    }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try child(key).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try child(key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try child(key).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try child(key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try child(key).decode(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try child(key).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try child(key).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try child(key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try child(key).decode(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try child(key).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try child(key).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try child(key).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try child(key).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try child(key).decode(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).decodeValue(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: type)
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }
    func superDecoder() throws -> any Decoder { NodeDecoder(value: members["super"] ?? .null, codingPath: codingPath) }
    func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
}

private struct UnkeyedNodeDecoder: UnkeyedDecodingContainer {
    let items: [FieldValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(items: [FieldValue], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private mutating func next() throws -> NodeDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "array ended"))
        }
        defer { currentIndex += 1 }
        return NodeDecoder(value: items[currentIndex], codingPath: codingPath + [AnyKey(intValue: currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, case .null = items[currentIndex] else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool { try next().decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next().decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next().decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next().decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next().decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next().decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next().decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next().decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next().decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next().decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next().decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next().decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next().decode(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }
    mutating func superDecoder() throws -> any Decoder { try next() }
}
