import Foundation

/// An array of sections kept in step with a watcher by applying its batches: the adapter for
/// lists that hold their own copy of the rows, and the contract checker of the tests. One mirror
/// applies every kind of batch (``RowChangeBatch``): typed values, records by name, or positions
/// only, whose rows it reads from the watcher.
///
/// ``apply(_:)`` follows the batch rules exactly (deletes and move sources at old paths; deleted
/// sections, which must then be empty, removed; new sections inserted; inserts and move
/// destinations at new paths, ascending; updates found at their new paths) and throws
/// ``SectionedMirror/InvalidBatch`` for a batch that breaks them, instead of corrupting the copy.
/// Where the batch names a row's id, the mirror checks that the path it gives holds that row.
public struct SectionedMirror<Row> {
    /// One section: its key (the grouped index components) and rows.
    public struct Section {
        /// The index components the section groups by.
        public var key: [FieldValue]
        /// The section's rows, in order.
        public var rows: [Row]
    }

    /// Why a batch could not be applied.
    public struct InvalidBatch: Error, CustomStringConvertible {
        /// What is wrong with the batch.
        public var description: String
    }

    /// The sections, in order, as of ``sequence``.
    public private(set) var sections: [Section] = []
    /// The rows' ids where batches named them, in step with ``sections``.
    private var ids: [[FieldValue?]] = []
    /// The sequence of the last batch applied.
    public private(set) var sequence: UInt64 = 0

    /// An empty mirror, ready for an initial batch.
    public init() {}

    /// All rows, section after section.
    public var rows: [Row] { sections.flatMap(\.rows) }

    /// Applies a batch that carries its rows' values by the contract's rules; throws
    /// ``InvalidBatch`` when one is broken. The mirror is then partly changed: start again from a
    /// new watcher's initial batch.
    public mutating func apply<B: RowChangeBatch>(_ batch: B) throws where B.Value == Row {
        try apply(batch, batch.rowChanges, reading: nil)
    }

    /// Applies a batch of positions (``IndexBatch``), reading each inserted, moved or updated
    /// row at its new path with `read` (an indexes-only watcher's ``BatchWatcher/object(at:)``).
    public mutating func apply(_ batch: IndexBatch, reading read: (RowPath) throws -> Row?) throws {
        try withoutActuallyEscaping(read) { read in
            try apply(batch, batch.rowChanges.map { RowChange<Row>($0.kind, from: $0.from, to: $0.to) }, reading: read)
        }
    }

    private mutating func apply(_ batch: some RowChangeBatch, _ changes: [RowChange<Row>], reading read: ((RowPath) throws -> Row?)?) throws {
        func fail(_ reason: String) -> InvalidBatch { InvalidBatch(description: "batch \(batch.fromSequence)→\(batch.toSequence): \(reason)") }
        if batch.isInitial || batch.isReset {
            sections = []
            ids = []
        }
        var seen = Set<FieldValue>()
        for id in changes.compactMap(\.id) where !seen.insert(id).inserted { throw fail("row \(id.jsonText) appears twice") }
        for kind in [RowChangeKind.delete, .insert, .move, .update] {
            let paths = changes.filter { $0.kind == kind }.compactMap { kind == .insert ? $0.to : $0.from }
            for (a, b) in zip(paths, paths.dropFirst()) where !(a < b) { throw fail("\(kind)s are not sorted ascending at \(a), \(b)") }
        }
        func value(_ change: RowChange<Row>, at path: RowPath) throws -> Row {
            if let row = change.row { return row }
            guard let read, let row = try read(path) else { throw fail("no value for the row at \(path)") }
            return row
        }

        // 1. Remove rows at deletes and move sources (old paths), from the end backwards.
        let removals = changes.filter { $0.kind == .delete || $0.kind == .move }
        for change in removals.sorted(by: { $0.from ?? RowPath(section: -1, row: -1) > $1.from ?? RowPath(section: -1, row: -1) }) {
            guard let path = change.from, sections.indices.contains(path.section), sections[path.section].rows.indices.contains(path.row) else {
                throw fail("old path \(change.from.map { "\($0)" } ?? "missing") is out of bounds")
            }
            if let id = change.id, let held = ids[path.section][path.row], held != id {
                throw fail("old path \(path) holds another row than \(id.jsonText)")
            }
            sections[path.section].rows.remove(at: path.row)
            ids[path.section].remove(at: path.row)
        }
        // 2. Remove deleted sections (now empty), from the end backwards.
        for index in batch.sectionDeletes.sorted(by: >) {
            guard sections.indices.contains(index) else { throw fail("section delete \(index) is out of bounds") }
            guard sections[index].rows.isEmpty else { throw fail("deleted section \(index) still has rows") }
            sections.remove(at: index)
            ids.remove(at: index)
        }
        // 3. Insert new sections (empty) at new indexes, ascending.
        for insert in batch.sectionInserts.sorted(by: { $0.index < $1.index }) {
            guard insert.index <= sections.count else { throw fail("section insert \(insert.index) is out of bounds") }
            sections.insert(Section(key: insert.key, rows: []), at: insert.index)
            ids.insert([], at: insert.index)
        }
        // 4. Insert rows at inserts and move destinations (new paths), ascending. A value the
        // batch does not carry is read at its new path, which is a path of the watcher's snapshot.
        let additions = changes.filter { $0.kind == .insert || $0.kind == .move }
            .sorted { $0.to ?? RowPath(section: -1, row: -1) < $1.to ?? RowPath(section: -1, row: -1) }
        for change in additions {
            guard let path = change.to, sections.indices.contains(path.section), path.row <= sections[path.section].rows.count else {
                throw fail("new path \(change.to.map { "\($0)" } ?? "missing") is out of bounds")
            }
            sections[path.section].rows.insert(try value(change, at: path), at: path.row)
            ids[path.section].insert(change.id, at: path.row)
        }
        // 5. Updates: the row is at its new path; take its new value.
        for change in changes where change.kind == .update {
            guard let path = change.to, sections.indices.contains(path.section), sections[path.section].rows.indices.contains(path.row) else {
                throw fail("update's new path \(change.to.map { "\($0)" } ?? "missing") is out of bounds")
            }
            if let id = change.id, let held = ids[path.section][path.row], held != id {
                throw fail("update's new path \(path) does not hold row \(id.jsonText)")
            }
            sections[path.section].rows[path.row] = try value(change, at: path)
        }
        sequence = batch.toSequence
    }
}

extension SectionedMirror.InvalidBatch: LocalizedError {
    /// The same message as ``description``.
    public var errorDescription: String? { description }
}

extension SectionedMirror: Sendable where Row: Sendable {}
extension SectionedMirror.Section: Sendable where Row: Sendable {}
