import Feedstore

/// What differs between two stores' entities and records, in every index's order: nil when they
/// hold the same entities (key kinds, index definitions) and the same entries; otherwise the
/// first difference found.
public func storeDifference(_ a: Store, _ b: Store) throws -> String? {
    let first = try a.catalog, second = try b.catalog
    guard Set(first.entities.keys) == Set(second.entities.keys) else {
        return "entities \(first.entities.keys.sorted()) against \(second.entities.keys.sorted())"
    }
    for (name, entity) in first.entities.sorted(by: { $0.key < $1.key }) {
        guard let other = second.entities[name], other.primaryKeyKind == entity.primaryKeyKind,
              other.indexes.map(\.definition) == entity.indexes.map(\.definition)
        else { return "\(name) is declared otherwise" }
        for index in [nil] + entity.indexes.map({ Optional($0.definition.name) }) {
            let left = try a.read { try $0.entries(entity: name, index: index) }
            let right = try b.read { try $0.entries(entity: name, index: index) }
            if left.count != right.count { return "\(name) by \(index ?? "primary key"): \(left.count) entries against \(right.count)" }
            if let at = zip(left, right).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
                return "\(name) by \(index ?? "primary key"): entry \(at) differs"
            }
        }
    }
    return nil
}
