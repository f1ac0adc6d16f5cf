/// Ranges converted to the kinds an index's components (or the primary key) are stored as,
/// before they are encoded: a range never matches nothing for being of another kind.
extension CatalogEntity {
    /// `range` with its prefix and bounds converted by ``keyComponents(_:for:startingAt:)``.
    func keyRange(_ range: IndexRange, for definition: IndexDefinition) throws -> IndexRange {
        try range.converting { values, offset in try keyComponents(values, for: definition, startingAt: offset) }
    }

    /// `range` of primary keys with each value converted by ``primaryKeyComponent(_:)``.
    func primaryKeyRange(_ range: IndexRange) throws -> IndexRange {
        try range.converting { values, _ in try values.map { $0.kindRank == 0 ? $0 : try primaryKeyComponent($0) } }
    }
}

extension IndexRange {
    /// The range with `convert` applied to its prefix and to each bound's values, given with
    /// the position of their first component in the index.
    func converting(_ convert: (_ values: [FieldValue], _ offset: Int) throws -> [FieldValue]) throws -> IndexRange {
        if self == .all { return self }
        func bound(_ bound: Bound?) throws -> Bound? {
            switch bound {
            case nil: nil
            case let .inclusive(values)?: .inclusive(try convert(values, prefix.count))
            case let .exclusive(values)?: .exclusive(try convert(values, prefix.count))
            }
        }
        return IndexRange(prefix: try convert(prefix, 0), from: try bound(lower), to: try bound(upper))
    }
}
