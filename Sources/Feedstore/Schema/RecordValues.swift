/// A record's top-level fields, read by name: what index keys and conditions are computed from.
/// Records read for display are dictionaries of named fields; the write path holds
/// ``RecordValues`` instead.
protocol TopLevelFields {
    /// The field's value, or `.null` when the record does not have it.
    func value(ofField name: String) -> FieldValue
    /// The value of field number `id` (`.null` when the record does not have it), or nil when
    /// these fields are held by name and must be read with ``value(ofField:)``.
    func value(ofFieldID id: UInt32) -> FieldValue?
}

extension Dictionary: TopLevelFields where Key == String, Value == FieldValue {
    func value(ofField name: String) -> FieldValue { self[name] ?? .null }
    func value(ofFieldID id: UInt32) -> FieldValue? { nil }
}

/// A record as the write path holds it: each field's value at its catalog field number, `.null`
/// where the record has none. Encoding a record into this form, storing it, comparing it with the
/// stored version and computing its index keys never hashes a field name; names are resolved
/// through the entity's short field list only where an index reads them.
struct RecordValues: TopLevelFields {
    /// The entity whose catalog numbers the slots follow.
    let entity: EntitySchema
    /// Values by catalog field number; may be shorter than the catalog (the rest are `.null`).
    var values: [FieldValue]

    init(entity: EntitySchema, values: [FieldValue]) {
        self.entity = entity
        self.values = values
    }

    /// A record with no fields yet, with a slot for each field number the catalog has given out.
    init(entity: EntitySchema) {
        self.init(entity: entity, values: Array(repeating: .null, count: Int(entity.catalog.nextFieldID)))
    }

    func value(ofField name: String) -> FieldValue {
        guard let field = entity.slot(named: name) else { return .null }
        return self[field.id]
    }

    func value(ofFieldID id: UInt32) -> FieldValue? { self[id] }

    subscript(id: UInt32) -> FieldValue {
        Int(id) < values.count ? values[Int(id)] : .null
    }

    /// Stores `value` at field number `id`, growing the slots as needed.
    mutating func set(_ value: FieldValue, at id: UInt32) {
        if Int(id) >= values.count { values.append(contentsOf: repeatElement(.null, count: Int(id) + 1 - values.count)) }
        values[Int(id)] = value
    }

    /// The numbers of the fields whose stored content differs, ascending.
    func changedFieldIDs(from old: RecordValues) -> [UInt32] {
        var changed: [UInt32] = []
        for i in 0..<max(values.count, old.values.count) where !self[UInt32(i)].isIdentical(to: old[UInt32(i)]) {
            changed.append(UInt32(i))
        }
        return changed
    }

    /// Appends the stored bytes (``RecordCodec``) to `out`.
    func encode(into out: inout [UInt8]) { RecordCodec.encode(byFieldID: values, into: &out) }
}
