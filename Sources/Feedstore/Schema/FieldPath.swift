/// A field name, or a nested field written as `"a.b.c"`, split once so that reading it from
/// every record written costs no string searching.
struct FieldPath: Sendable, Hashable {
    let name: String
    /// The top-level field.
    let head: String
    /// The nested members below it, if any.
    let rest: [String]

    init(_ name: String) {
        self.name = name
        let parts = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        head = parts[0]
        rest = Array(parts.dropFirst())
    }

    /// The value at this path in a record's top-level fields; missing fields (and paths through
    /// non-objects) read as `.null`.
    func value(in fields: some TopLevelFields) -> FieldValue {
        var current = fields.value(ofField: head)
        for part in rest {
            guard case let .object(members) = current else { return .null }
            current = members[part] ?? .null
        }
        return current
    }
}

extension FieldPath {
    /// Reads `name` (plain or dotted) without building a path for plain names.
    static func value(of name: String, in fields: some TopLevelFields) -> FieldValue {
        if !name.utf8.contains(UInt8(ascii: ".")) { return fields.value(ofField: name) }
        return FieldPath(name).value(in: fields)
    }
}
