/// The queries a read transaction resolved last, so that reading many positions of one query
/// (a list's visible rows, a screen of a lazy list) resolves its range once: a range with
/// bounds costs two descents of the counted index to resolve, as much as the read itself.
/// Valid for one snapshot; a write transaction, whose counts change, keeps none.
struct ResolvedQueryCache {
    private struct Entry {
        let entity: String
        let index: String
        let range: IndexRange
        let filter: IndexCondition?
        let resolved: ReadTransaction.ResolvedQuery
    }

    /// How many queries are kept: a few sections or windows of a list read in turns.
    static let capacity = 4
    private var entries: [Entry] = []
    /// Where the next entry goes once the cache is full.
    private var next = 0

    func find(entity: String, index: String, range: IndexRange, filter: IndexCondition? = nil) -> ReadTransaction.ResolvedQuery? {
        // Compared in place: copying an entry out would retain each of its references.
        for i in entries.indices where entries[i].entity == entity && entries[i].index == index && entries[i].range == range
            && entries[i].filter == filter
        {
            return entries[i].resolved
        }
        return nil
    }

    mutating func insert(_ resolved: ReadTransaction.ResolvedQuery, entity: String, index: String, range: IndexRange,
                         filter: IndexCondition? = nil)
    {
        if filter != nil, let i = entries.firstIndex(where: { $0.entity == entity && $0.index == index && $0.range == range && $0.filter == filter }) {
            // A watcher's order replaces the one this transaction had for the same query.
            entries[i] = Entry(entity: entity, index: index, range: range, filter: filter, resolved: resolved)
            return
        }
        let entry = Entry(entity: entity, index: index, range: range, filter: filter, resolved: resolved)
        if entries.count < Self.capacity {
            entries.append(entry)
        } else {
            entries[next] = entry
            next = (next + 1) % Self.capacity
        }
    }

    mutating func removeAll() {
        entries.removeAll()
        next = 0
    }
}
