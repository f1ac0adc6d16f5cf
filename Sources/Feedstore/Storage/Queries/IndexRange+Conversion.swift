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

extension IndexSchema {
    /// Whether every value of `range` already has the kind its component holds (or is null, or
    /// its component holds no one kind): then converting the range changes nothing, and a
    /// query skips it.
    /// - Complexity: O(components), with no allocation.
    func holdsItsKinds(_ range: IndexRange) -> Bool {
        func holds(_ values: [FieldValue], from offset: Int) -> Bool {
            for (i, value) in values.enumerated() where offset + i < componentKindRanks.count {
                if let rank = componentKindRanks[offset + i], value.kindRank != rank, value.kindRank != 0 { return false }
            }
            return true
        }
        return holds(range.prefix, from: 0) && holds(range.lower?.values ?? [], from: range.prefix.count)
            && holds(range.upper?.values ?? [], from: range.prefix.count)
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
