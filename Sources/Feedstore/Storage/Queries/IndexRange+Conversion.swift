/// Ranges converted to the kinds an index's components (or the primary key) are stored as,
/// before they are encoded: a range never matches nothing for being of another kind.
extension CatalogEntity {
    /// `range` with its prefix and bounds converted by ``keyComponents(_:for:startingAt:)``.
    func keyRange(_ range: IndexRange, for definition: IndexDefinition) throws -> IndexRange {
        if range == .all { return range }
        func bound(_ bound: IndexRange.Bound?) throws -> IndexRange.Bound? {
            switch bound {
            case nil: nil
            case let .inclusive(values)?: .inclusive(try keyComponents(values, for: definition, startingAt: range.prefix.count))
            case let .exclusive(values)?: .exclusive(try keyComponents(values, for: definition, startingAt: range.prefix.count))
            }
        }
        return IndexRange(prefix: try keyComponents(range.prefix, for: definition, startingAt: 0),
                          from: try bound(range.lower), to: try bound(range.upper))
    }

    /// `range` of primary keys with each value converted by ``primaryKeyComponent(_:)``.
    func primaryKeyRange(_ range: IndexRange) throws -> IndexRange {
        if range == .all { return range }
        func convert(_ values: [FieldValue]) throws -> [FieldValue] { try values.map { $0.kindRank == 0 ? $0 : try primaryKeyComponent($0) } }
        func bound(_ bound: IndexRange.Bound?) throws -> IndexRange.Bound? {
            switch bound {
            case nil: nil
            case let .inclusive(values)?: .inclusive(try convert(values))
            case let .exclusive(values)?: .exclusive(try convert(values))
            }
        }
        return IndexRange(prefix: try convert(range.prefix), from: try bound(range.lower), to: try bound(range.upper))
    }
}
