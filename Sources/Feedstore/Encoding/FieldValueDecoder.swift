/// Builds any `Decodable` value from a ``FieldValue`` tree; the inverse of ``FieldValueEncoder``.
/// The tree is encoded as a record value and read by ``StoredDecoder``, so a type decodes from a
/// tree exactly as it does from stored bytes: the same conversions and the same errors.
enum FieldValueDecoder {
    static func decode<T: Decodable>(_ type: T.Type, from value: FieldValue, codingPath: [any CodingKey] = []) throws -> T {
        var bytes: [UInt8] = []
        RecordCodec.appendValue(value, to: &bytes)
        return try bytes.withUnsafeBytes { try StoredRecord.decode(type, fromValue: $0, codingPath: codingPath) }
    }
}
