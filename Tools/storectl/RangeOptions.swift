import ArgumentParser
import Feedstore

/// `--prefix`, `--from` and `--to`: a range of keys given as JSON arrays of leading components,
/// converted to the kinds the catalog stores (so `[1]` matches an unsigned field, and
/// ISO 8601 strings match dates); a value of the wrong kind is a clear failure, not an empty range.
struct RangeOptions: ParsableArguments {
    @Option(help: "Leading key components, as a JSON array.")
    var prefix: String?

    @Option(help: "First key components (inclusive, after the prefix), as a JSON array.")
    var from: String?

    @Option(help: "Last key components (inclusive, after the prefix), as a JSON array.")
    var to: String?

    @Option(help: ArgumentHelp("Only records that meet this condition, as JSON: {\"field\": \"isRead\", \"==\": false}, "
                               + "{\"field\": \"title\", \"contains\": \"report\", \"caseInsensitive\": true}, "
                               + "{\"field\": \"folder\", \"in\": [1, 2]}, {\"and\": [...]}, {\"or\": [...]}, {\"not\": {...}}.",
                               valueName: "json"))
    var filter: String?

    /// Whether a range was given.
    var isGiven: Bool { prefix != nil || from != nil || to != nil }

    /// The `--filter` condition (its fields and their kinds are checked when the read runs); nil
    /// when none was given.
    var condition: IndexCondition? {
        guard let filter else { return nil }
        do {
            return try IndexCondition(jsonText: filter)
        } catch {
            StoreAccess.fail("--filter: \(error)")
        }
    }

    /// The range over `index` of `entity` (over its primary key when `index` is nil).
    func range(of entity: CatalogEntity, index: String?) -> IndexRange {
        func coerce(_ values: [FieldValue]?, from offset: Int) -> [FieldValue]? {
            guard let values else { return nil }
            do {
                if let index { return try entity.keyComponents(values, forIndex: index, startingAt: offset) }
                return try values.map { try entity.primaryKeyComponent($0) }
            } catch {
                StoreAccess.fail("\(error)")
            }
        }
        let prefixValues = coerce(StoreAccess.components(prefix, option: "--prefix"), from: 0) ?? []
        return IndexRange(prefix: prefixValues,
                          from: coerce(StoreAccess.components(from, option: "--from"), from: prefixValues.count).map { .inclusive($0) },
                          to: coerce(StoreAccess.components(to, option: "--to"), from: prefixValues.count).map { .inclusive($0) })
    }
}
