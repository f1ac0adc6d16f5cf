@testable import Feedstore
import Foundation

// Independent implementations of what the library's decoders do, kept as oracles for the
// differential tests: they share no code with the decoders they check.

/// A second reader of the record format: one pass that builds ``FieldValue`` trees, with the
/// standard library's UTF-8 validation and a dictionary for duplicate keys. The library's decoder
/// (validation, then reads of the validated bytes) must agree with it on every input.
enum ReferenceRecordDecoder {
    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> [RecordField] {
        var reader = ByteReader(bytes)
        guard try reader.byte() == RecordCodec.formatByte else { throw reader.failure("unknown record format") }
        let count = try reader.count()
        var fields: [RecordField] = []
        fields.reserveCapacity(count)
        var previous: Int64 = -1
        for _ in 0..<count {
            let id = try reader.varint()
            guard id <= UInt32.max, Int64(id) > previous else { throw reader.failure("field numbers out of order") }
            previous = Int64(id)
            fields.append(RecordField(id: UInt32(id), value: try value(&reader, depth: 0)))
        }
        guard reader.isAtEnd else { throw reader.failure("trailing bytes") }
        return fields
    }

    static func value(_ reader: inout ByteReader, depth: Int) throws -> FieldValue {
        guard depth < RecordCodec.maximumDepth else { throw reader.failure("nesting deeper than \(RecordCodec.maximumDepth)") }
        let raw = try reader.byte()
        guard let tag = RecordCodec.Tag(rawValue: raw) else { throw reader.failure("unknown value tag \(raw)") }
        switch tag {
        case .null: return .null
        case .falseValue: return .bool(false)
        case .trueValue: return .bool(true)
        case .int:
            let z = try reader.varint()
            return .int(Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1))
        case .uint: return .uint(try reader.varint())
        case .double: return .double(Double(bitPattern: try reader.fixed64()))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.fixed64())))
        case .string: return .string(try string(&reader))
        case .bytes: return .bytes(Array(try reader.bytes(try reader.count())))
        case .uuid:
            let b = try reader.bytes(16)
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                     b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case .array:
            let count = try reader.count()
            var items: [FieldValue] = []
            items.reserveCapacity(count)
            for _ in 0..<count { items.append(try value(&reader, depth: depth + 1)) }
            return .array(items)
        case .object:
            let count = try reader.count()
            var members: [String: FieldValue] = [:]
            for _ in 0..<count {
                let key = try string(&reader)
                guard members[key] == nil else { throw reader.failure("duplicate key \(key)") }
                members[key] = try value(&reader, depth: depth + 1)
            }
            return .object(members)
        }
    }

    private static func string(_ reader: inout ByteReader) throws -> String {
        let raw = try reader.bytes(try reader.count())
        guard let s = String(validating: raw, as: UTF8.self) else { throw reader.failure("invalid UTF-8") }
        return s
    }

    static func decode(_ bytes: [UInt8]) throws -> [RecordField] {
        try bytes.withUnsafeBytes { try decode($0) }
    }
}

/// A second Codable decoder: over a ``FieldValue`` tree, each key looked up in a dictionary. The
/// library's decoder, which reads stored bytes, must give the same value or the same error for
/// every record.
enum ReferenceTreeDecoder {
    static func decode<T: Decodable>(_ type: T.Type, from value: FieldValue) throws -> T {
        try NodeDecoder(value: value, codingPath: []).decodeValue(type)
    }

    /// Decodes `value` found at `codingPath` (a record's field, say), as part of a larger value.
    static func decode<T: Decodable>(_ type: T.Type, from value: FieldValue, codingPath: [any CodingKey]) throws -> T {
        try NodeDecoder(value: value, codingPath: codingPath).decodeValue(type)
    }
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

    var allKeys: [Key] { members.keys.sorted().compactMap { Key(stringValue: $0) } }
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
        return NodeDecoder(value: items[currentIndex], codingPath: codingPath + [IndexCodingKey(intValue: currentIndex)])
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
