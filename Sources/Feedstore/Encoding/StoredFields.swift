import Foundation

/// The top-level fields of one stored record, read by the names the entity encodes them with.
///
/// Values convert as they do through `Codable`: integers between widths and signs when the
/// value fits, dates also from numbers, UUIDs also from strings. A missing field, or a value of
/// another kind, throws a `DecodingError` naming the field, which the read reports as
/// ``FeedstoreError/decodingFailed(entity:id:reason:)``. It is valid only during the
/// initializer it is lent to, and cannot be kept: it points into the store's mapped pages.
/// Reading the fields in the order they were declared is fastest.
public struct StoredFields: ~Copyable {
    /// The record. Fields are found straight through it rather than through the reader behind
    /// `Codable`'s containers (which also serves nested objects): that costs about 80
    /// instructions more a field. The values are read by ``StoredDecoder``'s rules, as there.
    private let record: UnsafeMutablePointer<StoredRecord>

    init(record: UnsafeMutablePointer<StoredRecord>) { self.record = record }

    /// The field's node; a missing field is an error.
    private func node(_ name: String) throws -> StoredNode {
        guard let value = record.pointee.value(named: name) else {
            throw DecodingError.keyNotFound(FieldCodingKey(name), .init(codingPath: [], debugDescription: "missing field \(name)"))
        }
        return StoredNode(record: record, offset: value.bytes.baseAddress! - record.pointee.bytes.baseAddress!)
    }

    /// Whether the record lacks the field or holds null in it.
    public func isNil(_ name: String) throws -> Bool {
        guard let value = record.pointee.value(named: name) else { return true }
        if case .null = try value.scalar() { return true }
        return false
    }

    /// The field's value; a missing field, or a value of another kind, throws.
    public func decode(_ type: Bool.Type, _ name: String) throws -> Bool {
        try StoredDecoder.bool(try node(name), [FieldCodingKey(name)])
    }

    public func decode(_ type: String.Type, _ name: String) throws -> String {
        try StoredDecoder.string(try node(name), [FieldCodingKey(name)])
    }

    public func decode(_ type: Double.Type, _ name: String) throws -> Double {
        try StoredDecoder.double(try node(name), [FieldCodingKey(name)])
    }

    public func decode(_ type: Float.Type, _ name: String) throws -> Float {
        Float(try StoredDecoder.double(try node(name), [FieldCodingKey(name)]))
    }

    public func decode(_ type: Int.Type, _ name: String) throws -> Int { try storedInteger(type, name) }
    public func decode(_ type: Int8.Type, _ name: String) throws -> Int8 { try storedInteger(type, name) }
    public func decode(_ type: Int16.Type, _ name: String) throws -> Int16 { try storedInteger(type, name) }
    public func decode(_ type: Int32.Type, _ name: String) throws -> Int32 { try storedInteger(type, name) }
    public func decode(_ type: Int64.Type, _ name: String) throws -> Int64 { try storedInteger(type, name) }
    public func decode(_ type: UInt.Type, _ name: String) throws -> UInt { try storedInteger(type, name) }
    public func decode(_ type: UInt8.Type, _ name: String) throws -> UInt8 { try storedInteger(type, name) }
    public func decode(_ type: UInt16.Type, _ name: String) throws -> UInt16 { try storedInteger(type, name) }
    public func decode(_ type: UInt32.Type, _ name: String) throws -> UInt32 { try storedInteger(type, name) }
    public func decode(_ type: UInt64.Type, _ name: String) throws -> UInt64 { try storedInteger(type, name) }

    public func decode(_ type: Date.Type, _ name: String) throws -> Date {
        try StoredDecoder.special(type, try node(name), [FieldCodingKey(name)])
    }

    public func decode(_ type: UUID.Type, _ name: String) throws -> UUID {
        try StoredDecoder.special(type, try node(name), [FieldCodingKey(name)])
    }

    public func decode(_ type: Data.Type, _ name: String) throws -> Data {
        try StoredDecoder.special(type, try node(name), [FieldCodingKey(name)])
    }

    /// Any other `Decodable` value (a nested type, an array, an optional), through its
    /// `init(from:)`.
    public func decode<T: Decodable>(_ type: T.Type, _ name: String) throws -> T {
        let node = try node(name)
        if StoredDecoder.isSpecial(type) { return try StoredDecoder.special(type, node, [FieldCodingKey(name)]) }
        return try T(from: StoredDecoder(node: node, codingPath: [FieldCodingKey(name)]))
    }

    /// The value, or nil when the record lacks the field or holds null in it.
    public func decodeIfPresent<T: Decodable>(_ type: T.Type, _ name: String) throws -> T? {
        try isNil(name) ? nil : try decode(type, name)
    }

    /// The value, or nil when the record lacks the field or holds null in it: for `String`, the
    /// commonest optional field, without the generic path.
    public func decodeIfPresent(_ type: String.Type, _ name: String) throws -> String? {
        try isNil(name) ? nil : try decode(type, name)
    }

    private func storedInteger<T: FixedWidthInteger>(_ type: T.Type, _ name: String) throws -> T {
        try StoredDecoder.integer(type, try node(name), [FieldCodingKey(name)])
    }
}

/// A field's name as a coding key, for the coding paths of errors.
private struct FieldCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
