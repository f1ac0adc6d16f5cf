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

    @Option(help: ArgumentHelp("Only records that have every word of this text, through a text index (--index): \"quarterly report\".",
                               valueName: "text"))
    var search: String?

    @Flag(help: "With --search, the last word may be the start of a word, as in a search field while typing.")
    var lastWordIsPrefix = false

    /// Whether a range, a filter or a search was given.
    var isGiven: Bool { prefix != nil || from != nil || to != nil || filter != nil || search != nil }

    /// The range and condition of the records to read: `--prefix`, `--from` and `--to` over
    /// `index` of `entity` (over its primary key when `index` is nil), or `--search`'s range of a
    /// text index; `--filter` (whose fields and kinds are checked when the read runs), and the
    /// search's word tests.
    func query(of entity: CatalogEntity, index: String?) -> (range: IndexRange, filter: IndexCondition?) {
        var condition: IndexCondition?
        if let filter {
            do { condition = try IndexCondition(jsonText: filter) } catch { StoreAccess.fail("--filter: \(error)") }
        }
        guard let search else {
            if lastWordIsPrefix { StoreAccess.fail("--last-word-is-prefix goes with --search") }
            return (range(of: entity, index: index), condition)
        }
        let texts = entity.indexes.filter(\.definition.isText).map(\.definition.name)
        guard let index, let definition = entity.index(named: index)?.definition, definition.isText else {
            StoreAccess.fail("--search needs --index naming a text index of \(entity.name) (text indexes: \(texts.isEmpty ? "none" : texts.joined(separator: ", ")))")
        }
        if prefix != nil || from != nil || to != nil { StoreAccess.fail("--search finds its own range of the text index; give no --prefix, --from or --to") }
        let (range, words) = TextSearch(search, lastWordIsPrefix: lastWordIsPrefix).query(on: definition)
        let both = [condition, words].compactMap { $0 }
        return (range, both.count == 2 ? .and(both) : both.first)
    }

    /// The range over `index` of `entity` (over its primary key when `index` is nil).
    private func range(of entity: CatalogEntity, index: String?) -> IndexRange {
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
