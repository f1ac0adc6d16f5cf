import Foundation

extension CatalogEntity {
    /// Converts values parsed from JSON (by tools) to the kinds this entity stores in `field`:
    /// integers to unsigned where the field is `uint`, ISO 8601 strings or numbers to dates, UUID
    /// strings to UUIDs, base64 strings to bytes. Values that do not convert are returned as they
    /// are (and then match nothing).
    public func coerce(_ value: FieldValue, toField field: String) -> FieldValue {
        guard let kind = self.field(named: FieldPath(field).head)?.kind else { return value }
        return FieldValue.coerce(value, to: kind)
    }

    /// Converts a primary key given as JSON to the kind the entity's keys are stored as.
    public func coercePrimaryKey(_ value: FieldValue) -> FieldValue { FieldValue.coerce(value, to: primaryKeyKind) }

    /// The values of an index's components from `offset` on, each converted to the kind its
    /// field is stored as where nothing is lost (`.int(5)` for a `UInt64` field is `.uint(5)`).
    /// A value that does not convert (and is not null) is an error instead of a key that matches
    /// nothing: a tool given `["a"]` for an integer field says so. Queries, storectl and writes
    /// by name convert by this one table.
    /// - Throws: ``FeedstoreError/unknownIndex(entity:index:indexes:)``;
    ///   ``FeedstoreError/invalidRange(entity:index:reason:)`` naming the component and both kinds.
    public func keyComponents(_ values: [FieldValue], forIndex index: String, startingAt offset: Int = 0) throws -> [FieldValue] {
        guard let definition = self.index(named: index)?.definition else { throw unknownIndex(index) }
        return try keyComponents(values, for: definition, startingAt: offset)
    }

    /// ``keyComponents(_:forIndex:startingAt:)`` for an index's definition.
    func keyComponents(_ values: [FieldValue], for definition: IndexDefinition, startingAt offset: Int) throws -> [FieldValue] {
        var converted = values
        for (i, value) in values.enumerated() where offset + i < definition.components.count {
            let field = definition.components[offset + i].field
            guard let kind = keyKind(ofField: field), value.kindRank != 0 else { continue }
            let component = FieldValue.coerce(value, to: kind)
            guard component.kindName == kind else {
                throw FeedstoreError.invalidRange(entity: name, index: definition.name, reason: "component \(offset + i + 1) is field \(field), "
                    + "stored as \(FieldValue.describingKind(kind)); got \(value.jsonText) (\(value.kindName)), which does not convert to it")
            }
            converted[i] = component
        }
        return converted
    }

    /// The one kind index keys hold for `field` (plain or dotted): the kind the entity's type
    /// declares, else the one kind its records have held; nil when values of several kinds may
    /// be there (a field declared `any`, a nested field, a field of mixed kinds) or none is known.
    func keyKind(ofField field: String) -> String? {
        let declared = declaredKinds?[field].map { $0.hasSuffix("?") ? String($0.dropLast()) : $0 }
        let kind = declared ?? self.field(named: field)?.kind
        guard let kind, FieldValue.keyKindNames.contains(kind) else { return nil }
        return kind
    }

    /// ``FeedstoreError/unknownIndex(entity:index:indexes:)`` for `index`, listing the entity's indexes.
    func unknownIndex(_ index: String) -> FeedstoreError {
        .unknownIndex(entity: name, index: index, indexes: indexes.map(\.definition.name))
    }

    /// Like ``coercePrimaryKey(_:)``, but a value not of the primary key's kind is an error.
    /// - Throws: ``FeedstoreError/invalidRange(entity:index:reason:)``.
    public func primaryKeyComponent(_ value: FieldValue) throws -> FieldValue {
        let converted = coercePrimaryKey(value)
        guard converted.kindName == primaryKeyKind else {
            throw FeedstoreError.invalidRange(entity: name, index: "primary key",
                                              reason: "keys are stored as \(FieldValue.describingKind(primaryKeyKind)); got \(value.jsonText)")
        }
        return converted
    }

    /// The values of an index's leading components, converted for its fields.
    public func coerce(_ values: [FieldValue], forIndex index: String, startingAt offset: Int = 0) -> [FieldValue] {
        guard let definition = self.index(named: index)?.definition else { return values }
        return values.enumerated().map { i, value in
            offset + i < definition.components.count ? coerce(value, toField: definition.components[offset + i].field) : value
        }
    }
}

extension FieldValue {
    /// A kind's name, and for the kinds JSON writes as strings, the text that converts to one:
    /// for messages about a value given as JSON that is not of that kind.
    static func describingKind(_ kind: String) -> String {
        switch kind {
        case "date": #"date (ISO 8601 text with a time and a zone, such as "2026-01-01T09:30:00Z")"#
        case "uuid": #"uuid (text such as "6f1c2a9e-3b7d-4c1e-9a2b-5d8e7f6a4b3c")"#
        case "bytes": "bytes (base64 text)"
        default: kind
        }
    }

    /// The kinds a key component holds one of.
    static let keyKindNames: Set<String> = ["bool", "int", "uint", "double", "date", "string", "bytes", "uuid"]

    /// `value` converted to `kind` where nothing is lost, else `value` as it is: the one table
    /// by which queries, storectl's keys and ranges, and writes by name convert values.
    static func coerce(_ value: FieldValue, to kind: String) -> FieldValue {
        switch (kind, value) {
        case let ("uint", .int(i)) where i >= 0: return .uint(UInt64(i))
        case let ("int", .uint(u)) where u <= UInt64(Int64.max): return .int(Int64(u))
        case let ("double", .int(i)): return Double(exactly: i).map { .double($0) } ?? value
        case let ("double", .uint(u)): return Double(exactly: u).map { .double($0) } ?? value
        // Integral doubles (JSON writers that print 3.0) convert when the integer is exact.
        case let ("int", .double(d)) where d.rounded() == d: return Int64(exactly: d).map { .int($0) } ?? value
        case let ("uint", .double(d)) where d.rounded() == d: return UInt64(exactly: d).map { .uint($0) } ?? value
        case let ("date", .string(s)):
            return Self.date(fromJSONText: s).map { .date($0) } ?? value
        case let ("date", .int(i)): return .date(Date(timeIntervalSince1970: Double(i)))
        case let ("date", .double(d)): return .date(Date(timeIntervalSince1970: d))
        case let ("uuid", .string(s)): return UUID(uuidString: s).map { .uuid($0) } ?? value
        case let ("bytes", .string(s)): return Data(base64Encoded: s).map { .bytes([UInt8]($0)) } ?? value
        default: return value
        }
    }
}
