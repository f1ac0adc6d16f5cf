/// A query's filter made ready to test stored records: field names resolved to catalog numbers,
/// constants converted to the kinds the fields are stored as, text tests folded once. It reads
/// only the fields the condition names, where they lie in the record's bytes; strings are
/// tested without being copied.
struct RecordFilter {
    /// The condition as given, checked, with its constants converted.
    let condition: IndexCondition
    private let root: Node

    /// Where a field's value is: a top-level field by catalog number (nil: the catalog has no
    /// such field yet, so every record lacks it), then members of nested objects.
    private struct Field {
        let id: UInt32?
        let members: [String]
    }

    private indirect enum Node {
        case compare(Field, IndexCondition.Comparison, FieldValue)
        case text(Field, TextMatcher)
        case oneOf(Field, [FieldValue])
        case isNull(Field)
        case words([Field], WordMatcher)
        case and([Node])
        case or([Node])
        case not(Node)
    }

    /// Resolves `condition` against `entity`'s catalog (``CatalogEntity/checkedFilter(_:)``).
    init(_ condition: IndexCondition, entity: EntitySchema) throws {
        self.condition = try entity.catalog.checkedFilter(condition)
        root = Self.node(self.condition, entity: entity)
    }

    private static func node(_ condition: IndexCondition, entity: EntitySchema) -> Node {
        func field(_ name: String) -> Field {
            let path = FieldPath(name)
            return Field(id: entity.fieldTable.position(named: path.head).map { entity.fieldTable.ids[$0] }, members: path.rest)
        }
        switch condition {
        case let .compare(name, comparison, value): return .compare(field(name), comparison, value)
        case let .text(name, test): return .text(field(name), TextMatcher(test))
        case let .oneOf(name, values): return .oneOf(field(name), values)
        case let .isNull(name): return .isNull(field(name))
        case let .words(names, test): return .words(names.map(field), WordMatcher(test))
        case let .and(parts): return .and(parts.map { node($0, entity: entity) })
        case let .or(parts): return .or(parts.map { node($0, entity: entity) })
        case let .not(inner): return .not(node(inner, entity: entity))
        }
    }

    /// Whether the validated record passes.
    func holds(in record: StoredRecord) throws -> Bool {
        try Self.holds(root, record)
    }

    private static func holds(_ node: Node, _ record: StoredRecord) throws -> Bool {
        switch node {
        case let .compare(field, comparison, constant):
            return comparison.accepts(FieldValue.compare(try value(field, record)?.fieldValue() ?? .null, constant))
        case let .text(field, matcher):
            guard let utf8 = try value(field, record)?.utf8() else { return false }
            return matcher.matches(utf8: utf8)
        case let .oneOf(field, values):
            let v = try value(field, record)?.fieldValue() ?? .null
            return values.contains { FieldValue.compare(v, $0) == 0 }
        case let .isNull(field):
            guard let v = try value(field, record) else { return true }
            return try v.tag() == .null
        case let .words(fields, matcher):
            for field in fields {
                if let utf8 = try value(field, record)?.utf8(), matcher.matches(String(decoding: utf8, as: UTF8.self)) { return true }
            }
            return false
        case let .and(nodes):
            for node in nodes where !(try holds(node, record)) { return false }
            return true
        case let .or(nodes):
            for node in nodes where try holds(node, record) { return true }
            return false
        case let .not(inner):
            return !(try holds(inner, record))
        }
    }

    /// The field's stored value; nil when the record lacks it.
    private static func value(_ field: Field, _ record: StoredRecord) throws -> StoredValue? {
        guard let id = field.id, Int(id) < record.fieldOffsets.count, record.fieldOffsets[Int(id)] >= 0 else { return nil }
        var value = StoredValue(record.bytes, at: record.fieldOffsets[Int(id)])
        for member in field.members {
            guard let members = try value.members(), let inner = try members.value(forKey: member) else { return nil }
            value = inner
        }
        return value
    }
}
