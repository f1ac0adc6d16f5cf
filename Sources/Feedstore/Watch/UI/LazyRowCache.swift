/// The rows a lazy list has read, by shown position (from 0 across sections), with the layout
/// they are shown in: what ``LazyLiveList`` keeps between batches.
///
/// Applying a batch moves every cached row to its new position in one pass over the cache, or
/// drops it when the batch deletes, moves or updates it, so the cache never holds a stale or
/// misplaced row; dropped rows are read again when asked for. About ``capacity`` rows are kept
/// (those nearest the last one read), so memory is O(capacity) whatever the list's length.
struct LazyRowCache<Row> {
    /// What the snapshot shown shows: the watcher's own layout, which maps positions to paths.
    private(set) var layout = ListLayout.empty(descending: false)
    /// Rows in all sections.
    var count: Int { layout.shownCount }
    /// Where each cached row is kept in ``values``, by shown position. Batches move positions
    /// only: this table holds plain integers, so moving a thousand rows costs microseconds
    /// (generic code moving the rows themselves would not be specialized for the list's type).
    private(set) var slots: [Int: Int] = [:]
    private var values: [Row?] = []
    /// Slots of ``values`` free for reuse.
    private var free: [Int] = []
    /// The rows kept after an eviction.
    let capacity: Int
    /// The most rows kept: evictions happen once the cache holds a quarter more than ``capacity``.
    var maximumRows: Int { capacity + capacity / 4 }
    /// Rows read from the store at once.
    let pageSize: Int
    /// The position last read: eviction keeps the rows nearest to it.
    private var lastRead = 0

    init(capacity: Int, pageSize: Int) {
        precondition(pageSize >= 1 && capacity >= pageSize, "a lazy list's cache must hold at least one page")
        self.capacity = capacity
        self.pageSize = pageSize
    }

    /// The rows read so far, by shown position.
    var rows: [Int: Row] { slots.compactMapValues { values[$0] } }

    /// The cached row at `position`, noting the read.
    mutating func row(at position: Int) -> Row? {
        lastRead = position
        return slots[position].flatMap { values[$0] }
    }

    /// The positions of the page that holds `position`: the rows to read when it is missing.
    func page(containing position: Int) -> Range<Int> {
        let start = position - position % pageSize
        return start..<Swift.min(start + pageSize, count)
    }

    /// Keeps rows read from the store, the first at `start`, then evicts the rows farthest from
    /// the last one read beyond ``capacity``.
    mutating func store<Rows: Collection<Row>>(_ read: Rows, from start: Int) {
        for (offset, row) in read.enumerated() where start + offset < count {
            if let slot = slots[start + offset] {
                values[slot] = row
            } else if let slot = free.popLast() {
                values[slot] = row
                slots[start + offset] = slot
            } else {
                slots[start + offset] = values.count
                values.append(row)
            }
        }
        // Evicting sorts the cache by distance: done once a quarter more than the capacity is
        // cached, it costs a fraction of the page reads that filled that quarter.
        guard slots.count > maximumRows else { return }
        release(PositionRemap.farthest(in: &slots, from: lastRead, keeping: capacity))
    }

    /// Forgets the rows of `dropped` slots.
    private mutating func release(_ dropped: [Int]) {
        for slot in dropped { values[slot] = nil }
        free += dropped
    }

    /// Forgets every row.
    private mutating func removeAll() {
        slots = [:]
        values = []
        free = []
    }

    // MARK: Batches

    /// Takes the list to the snapshot a batch produces, whose layout is `new`, and returns the
    /// shown positions (new ones) whose rows changed: rows inserted, removed or
    /// shifted past, moved or updated. Rows before the first insertion or removal keep their
    /// positions and rows.
    /// - Complexity: O(c + k log k) for c cached rows and k ranges, moves and updates in the batch.
    mutating func apply(_ batch: IndexBatch, layout new: ListLayout) -> ChangedPositions {
        let oldCount = count
        let old = layout
        layout = new
        if batch.isInitial || batch.isReset {
            removeAll()
            return ChangedPositions(from: 0, through: Swift.max(oldCount, count), updated: [])
        }
        // Runs of rows, as the shown positions they cover in the old or the new layout.
        func positions(_ run: IndexBatch.RowRange, in layout: ListLayout) -> Range<Int> {
            let start = layout.shownPosition(of: RowPath(section: run.section, row: run.rows.lowerBound))
            return start ..< start + run.rows.count
        }
        func position(_ path: RowPath, in layout: ListLayout) -> Range<Int> {
            let start = layout.shownPosition(of: path)
            return start ..< start + 1
        }
        let removed = PositionRemap.merged(batch.deletes.map { positions($0, in: old) } + batch.moves.map { position($0.from, in: old) })
        let inserted = PositionRemap.merged(batch.inserts.map { positions($0, in: new) } + batch.moves.map { position($0.to, in: new) })
        let remap = PositionRemap(removed: removed, inserted: inserted, updated: Set(batch.updates.map { old.shownPosition(of: $0.from) }))
        let dropped = remap.apply(to: &slots)
        release(dropped)

        let firstShift = Swift.min(removed.first?.lowerBound ?? .max, inserted.first?.lowerBound ?? .max)
        return ChangedPositions(from: firstShift, through: Swift.max(oldCount, count), updated: batch.updates.map { new.shownPosition(of: $0.to) })
    }

}

/// The new positions whose rows a batch changed: every position from the first insertion or
/// removal on (rows there shifted), and the positions of updated rows.
struct ChangedPositions: Equatable {
    /// From here to the end of the list (`through`, exclusive), rows changed.
    var from: Int
    var through: Int
    var updated: [Int]

    /// Whether a row in `range` changed.
    func overlaps(_ range: Range<Int>) -> Bool {
        range.overlaps(from..<Swift.max(from, through)) || updated.contains { range.contains($0) }
    }
}
