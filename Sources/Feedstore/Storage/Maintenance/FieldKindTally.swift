/// What `verify` holds records of an entity to when the catalog has its type's field names but
/// not their kinds: each top-level field holds values of one kind (null aside), and every field
/// is one the type declares. Counts each field's kinds, with the first record of each.
struct FieldKindTally {
    let declared: DeclaredFields
    /// Per field, per kind: how many records, and the primary key of the first.
    private var kinds: [String: [String: (count: Int, first: [UInt8])]] = [:]
    /// Per field the type does not declare: how many records hold it, and the first.
    private var undeclared: [String: (count: Int, first: [UInt8])] = [:]

    init(declared: DeclaredFields) {
        self.declared = declared
    }

    mutating func add(_ fields: [String: FieldValue], primaryKey: [UInt8]) {
        for (name, value) in fields where value.kindRank != 0 {
            kinds[name, default: [:]][value.kindName, default: (0, primaryKey)].count += 1
            if !declared.contains(name) { undeclared[name, default: (0, primaryKey)].count += 1 }
        }
    }

    /// One line per field holding several kinds and per undeclared field, by field name.
    func problems(entity: String) -> [String] {
        func id(_ key: [UInt8]) -> String { ((try? KeyDecoder.decode(key).first?.value) ?? .null).jsonText }
        var found: [String] = []
        for (name, byKind) in kinds.sorted(by: { $0.key < $1.key }) {
            if let extra = undeclared[name] {
                found.append("\(entity).\(name) is not a field of the entity's type (its fields are "
                    + "\(declared.topLevel.joined(separator: ", "))), yet \(extra.count) record\(extra.count == 1 ? "" : "s") "
                    + "hold\(extra.count == 1 ? "s" : "") it (first: \(entity) \(id(extra.first)))")
            } else if byKind.count > 1 {
                let counts = byKind.sorted { $0.value.count > $1.value.count || ($0.value.count == $1.value.count && $0.key < $1.key) }
                    .map { "\($0.key) in \($0.value.count) (first: \(entity) \(id($0.value.first)))" }
                found.append("\(entity).\(name) holds values of \(byKind.count) kinds, which its type cannot all read: "
                    + counts.joined(separator: ", "))
            }
        }
        return found
    }
}
