/// Reads a field, or a nested field written as `"a.b.c"`, from a record's top-level fields.
/// A missing field (or a path through a non-object) reads as `.null`.
func fieldValue(_ path: String, in fields: [String: FieldValue]) -> FieldValue {
    guard path.contains(".") else { return fields[path] ?? .null }
    var parts = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    var current: FieldValue = fields[parts.removeFirst()] ?? .null
    for part in parts {
        guard case let .object(members) = current else { return .null }
        current = members[part] ?? .null
    }
    return current
}
