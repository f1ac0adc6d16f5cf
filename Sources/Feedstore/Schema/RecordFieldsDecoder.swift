import Foundation

/// Decodes an entity straight from its record's top-level fields, held by catalog number as the
/// record codec reads them. Each coding key is found through the entity's slot for that name (raw
/// words first, see ``EntitySchema/slot(named:)``) and a binary search of the fields, so no
/// dictionary of named fields and no object tree of the record are built. Scalars that already
/// have the kind asked for are returned at once; everything else (conversions, nested values,
/// mismatches) goes through ``FieldValueDecoder``, so the rules and the errors are the same as
/// decoding the record as one object.
struct RecordFieldsDecoder: Decoder {
    /// The record's fields, by ascending catalog number (as ``RecordCodec`` decodes them).
    let fields: [RecordField]
    let entity: EntitySchema

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    static func decode<T: Decodable>(_ type: T.Type, from fields: [RecordField], of entity: EntitySchema) throws -> T {
        try T(from: RecordFieldsDecoder(fields: fields, entity: entity))
    }

    /// The value of the field named `name`, or nil when the record has none.
    func value(named name: String) -> FieldValue? {
        guard let slot = entity.slot(named: name) else { return nil }
        var low = 0
        var high = fields.count
        while low < high {
            let middle = (low + high) / 2
            if fields[middle].id < slot.id { low = middle + 1 } else { high = middle }
        }
        // Not a conditional expression: FieldValue takes `nil` as `.null`, which would make a
        // missing field present.
        guard low < fields.count, fields[low].id == slot.id else { return nil }
        return fields[low].value
    }

    /// The record as one object, for the rare shapes read other than through a keyed container.
    private var object: FieldValue { .object(entity.named(fields)) }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(RecordFieldsContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try FieldValueDecoder.decoder(for: object, codingPath: []).unkeyedContainer()
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try FieldValueDecoder.decoder(for: object, codingPath: []).singleValueContainer()
    }
}

private struct RecordFieldsContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: RecordFieldsDecoder
    var codingPath: [any CodingKey] { [] }

    var allKeys: [Key] { decoder.fields.compactMap { decoder.entity.fieldNames[$0.id].flatMap { Key(stringValue: $0) } } }

    func contains(_ key: Key) -> Bool { decoder.value(named: key.stringValue) != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let value = decoder.value(named: key.stringValue) else { return true }
        if case .null = value { return true }
        return false
    }

    private func value(_ key: Key) throws -> FieldValue {
        guard let value = decoder.value(named: key.stringValue) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: [], debugDescription: "missing field \(key.stringValue)"))
        }
        return value
    }

    /// `value` decoded by the tree decoder: its conversions, nested values and errors.
    private func converted<T: Decodable>(_ type: T.Type, _ value: FieldValue, _ key: Key) throws -> T {
        try FieldValueDecoder.decode(type, from: value, codingPath: [key])
    }

    private func integer<T: FixedWidthInteger & Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        let value = try value(key)
        switch value {
        case let .int(i): if let result = T(exactly: i) { return result }
        case let .uint(u): if let result = T(exactly: u) { return result }
        default: break
        }
        return try converted(type, value, key)
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        let value = try value(key)
        if case let .bool(b) = value { return b }
        return try converted(type, value, key)
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        let value = try value(key)
        if case let .string(s) = value { return s }
        return try converted(type, value, key)
    }

    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        let value = try value(key)
        if case let .double(d) = value { return d }
        return try converted(type, value, key)
    }

    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try converted(type, try value(key), key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let value = try value(key)
        // Dates are the commonest field that is not a plain scalar.
        if T.self == Date.self, case let .date(d) = value { return d as! T }
        return try converted(type, value, key)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try FieldValueDecoder.decoder(for: try value(key), codingPath: [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try FieldValueDecoder.decoder(for: try value(key), codingPath: [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        FieldValueDecoder.decoder(for: decoder.value(named: "super") ?? .null, codingPath: [])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        FieldValueDecoder.decoder(for: try value(key), codingPath: [key])
    }
}
