extension ChangeBatch {
    /// The batch's structural changes as a `CollectionDifference` of row ids, for lists with one
    /// section: removals at old offsets (deletes and move sources), insertions at new offsets
    /// (inserts and move destinations), moves associated both ways. Updates are content changes
    /// and are not part of it. Nil when the batch spans several sections or changes sections
    /// (beyond an initial batch creating section 0).
    public func difference() -> CollectionDifference<E.ID>? {
        let paths = deletes.map(\.path) + inserts.map(\.path) + moves.flatMap { [$0.from, $0.to] }
        guard paths.allSatisfy({ $0.section == 0 }), sectionDeletes.isEmpty || isReset,
              sectionInserts.allSatisfy({ $0.index == 0 && (isInitial || isReset) }) else { return nil }
        var changes: [CollectionDifference<E.ID>.Change] = []
        for d in deletes { changes.append(.remove(offset: d.path.row, element: d.id, associatedWith: nil)) }
        for m in moves {
            changes.append(.remove(offset: m.from.row, element: m.id, associatedWith: m.to.row))
            changes.append(.insert(offset: m.to.row, element: m.id, associatedWith: m.from.row))
        }
        for i in inserts { changes.append(.insert(offset: i.path.row, element: i.id, associatedWith: nil)) }
        return CollectionDifference(changes)
    }
}
