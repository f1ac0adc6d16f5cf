/// An index entry as a walk meets it: its key and its record's stored bytes, both borrowed from
/// the transaction. The key's parts are decoded only when asked for, so a typed read of a row
/// decodes the record and nothing else.
struct ScannedEntry {
    /// The entry's key: the index components, then the primary key.
    let key: UnsafeRawBufferPointer
    /// Where the primary key starts in `key` (0 in primary-key order).
    let primaryKeyStart: Int
    let record: UnsafeRawBufferPointer

    var primaryKey: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: key[primaryKeyStart...]) }

    /// The primary key's value.
    func id() throws -> FieldValue {
        var decoder = KeyDecoder(primaryKey)
        return try decoder.next().value
    }

    /// The primary key's value for a message, `null` when it does not decode.
    var idForMessages: FieldValue { (try? id()) ?? .null }

    /// The index components, without the primary key (none in primary-key order).
    func components() throws -> [FieldValue] {
        var decoder = KeyDecoder(UnsafeRawBufferPointer(rebasing: key[..<primaryKeyStart]))
        var components: [FieldValue] = []
        while !decoder.isAtEnd { components.append(try decoder.next().value) }
        return components
    }
}
