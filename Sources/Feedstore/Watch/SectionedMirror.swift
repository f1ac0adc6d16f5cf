/// An array of sections kept in step with a watcher by applying its batches: the adapter for
/// lists that hold their own copy of the rows, and the contract checker of the tests.
///
/// ``apply(_:)`` follows the batch rules exactly (deletes and move sources at old paths; deleted
/// sections, which must then be empty, removed; new sections inserted; inserts and move
/// destinations at new paths, ascending; updates found at their new paths) and throws
/// ``SectionedMirror/InvalidBatch`` for a batch that breaks them, instead of corrupting the copy.
public struct SectionedMirror<E: Entity>: Sendable {
    /// One section: its key (the grouped index components) and rows.
    public struct Section: Sendable {
        /// The index components the section groups by.
        public var key: [FieldValue]
        /// The row within the section.
        public var rows: [E]
    }

    /// Why a batch could not be applied.
    public struct InvalidBatch: Error, CustomStringConvertible {
        /// What is wrong with the batch.
        public var description: String
    }

    /// The sections, in order, as of ``sequence``.
    public private(set) var sections: [Section] = []
    /// The sequence of the last batch applied.
    public private(set) var sequence: UInt64 = 0

    /// An empty mirror, ready for an initial batch.
    public init() {}

    /// All rows, section after section.
    public var rows: [E] { sections.flatMap(\.rows) }

    /// Applies a batch by the contract's rules; throws ``InvalidBatch`` when one is broken. The
    /// mirror is then partly changed: start again from a new watcher's initial batch.
    public mutating func apply(_ batch: ChangeBatch<E>) throws {
        func fail(_ reason: String) -> InvalidBatch { InvalidBatch(description: "batch \(batch.fromSequence)→\(batch.toSequence): \(reason)") }
        if batch.isInitial || batch.isReset { sections = [] }
        var ids = Set<E.ID>()
        for id in batch.deletes.map(\.id) + batch.inserts.map(\.id) + batch.moves.map(\.id) + batch.updates.map(\.id) {
            guard ids.insert(id).inserted else { throw fail("row \(id) appears twice") }
        }
        func sorted(_ paths: [RowPath], _ name: String) throws {
            for (a, b) in zip(paths, paths.dropFirst()) where !(a < b) { throw fail("\(name) are not sorted ascending at \(a), \(b)") }
        }
        try sorted(batch.deletes.map(\.path), "deletes")
        try sorted(batch.inserts.map(\.path), "inserts")
        try sorted(batch.moves.map(\.from), "moves")
        try sorted(batch.updates.map(\.from), "updates")

        // 1. Remove rows at deletes and move sources (old paths), from the end backwards.
        var moved: [E.ID: E] = [:]
        let removals = batch.deletes.map { ($0.path, $0.id) } + batch.moves.map { ($0.from, $0.id) }
        for (path, id) in removals.sorted(by: { $0.0 > $1.0 }) {
            guard sections.indices.contains(path.section), sections[path.section].rows.indices.contains(path.row) else {
                throw fail("old path \(path) is out of bounds")
            }
            guard sections[path.section].rows[path.row].id == id else { throw fail("old path \(path) holds another row than \(id)") }
            sections[path.section].rows.remove(at: path.row)
        }
        for move in batch.moves { moved[move.id] = move.value }
        // 2. Remove deleted sections (now empty), from the end backwards.
        for index in batch.sectionDeletes.sorted(by: >) {
            guard sections.indices.contains(index) else { throw fail("section delete \(index) is out of bounds") }
            guard sections[index].rows.isEmpty else { throw fail("deleted section \(index) still has rows") }
            sections.remove(at: index)
        }
        // 3. Insert new sections (empty) at new indexes, ascending.
        for insert in batch.sectionInserts.sorted(by: { $0.index < $1.index }) {
            guard insert.index <= sections.count else { throw fail("section insert \(insert.index) is out of bounds") }
            sections.insert(Section(key: insert.key, rows: []), at: insert.index)
        }
        // 4. Insert rows at inserts and move destinations (new paths), ascending.
        let additions = batch.inserts.map { ($0.path, $0.value) } + batch.moves.map { ($0.to, moved[$0.id]!) }
        for (path, value) in additions.sorted(by: { $0.0 < $1.0 }) {
            guard sections.indices.contains(path.section), path.row <= sections[path.section].rows.count else {
                throw fail("new path \(path) is out of bounds")
            }
            sections[path.section].rows.insert(value, at: path.row)
        }
        // 5. Updates: the row is at its new path; take its new value.
        for update in batch.updates {
            let path = update.to
            guard sections.indices.contains(path.section), sections[path.section].rows.indices.contains(path.row),
                  sections[path.section].rows[path.row].id == update.id
            else { throw fail("update's new path \(path) does not hold row \(update.id)") }
            sections[path.section].rows[path.row] = update.value
        }
        sequence = batch.toSequence
    }
}
