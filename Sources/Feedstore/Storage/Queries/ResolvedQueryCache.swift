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
    /// Plain ranges, and filtered queries apart, so that finding a plain range compares no filters.
    private var entries: [Entry] = []
    private var filteredEntries: [Entry] = []
    /// Where the next entry goes once the cache is full.
    private var next = 0

    func find(entity: String, index: String, range: IndexRange) -> ReadTransaction.ResolvedQuery? {
        // Compared in place: copying an entry out would retain each of its references.
        for i in entries.indices where entries[i].entity == entity && entries[i].index == index && entries[i].range == range {
            return entries[i].resolved
        }
        return nil
    }

    func find(entity: String, index: String, range: IndexRange, filter: IndexCondition) -> ReadTransaction.ResolvedQuery? {
        for i in filteredEntries.indices where filteredEntries[i].entity == entity && filteredEntries[i].index == index
            && filteredEntries[i].range == range && filteredEntries[i].filter == filter
        {
            return filteredEntries[i].resolved
        }
        return nil
    }

    /// Keeps a filtered query's resolution (its order can be large: the last few are kept); a
    /// watcher's order replaces the one this transaction had for the same query.
    mutating func insert(_ resolved: ReadTransaction.ResolvedQuery, entity: String, index: String, range: IndexRange, filter: IndexCondition) {
        let entry = Entry(entity: entity, index: index, range: range, filter: filter, resolved: resolved)
        if let i = filteredEntries.firstIndex(where: { $0.entity == entity && $0.index == index && $0.range == range && $0.filter == filter }) {
            filteredEntries[i] = entry
            return
        }
        if filteredEntries.count >= Self.capacity { filteredEntries.removeFirst() }
        filteredEntries.append(entry)
    }

    mutating func insert(_ resolved: ReadTransaction.ResolvedQuery, entity: String, index: String, range: IndexRange) {
        let entry = Entry(entity: entity, index: index, range: range, filter: nil, resolved: resolved)
        if entries.count < Self.capacity {
            entries.append(entry)
        } else {
            entries[next] = entry
            next = (next + 1) % Self.capacity
        }
    }

    mutating func removeAll() {
        entries.removeAll()
        filteredEntries.removeAll()
        next = 0
    }
}
