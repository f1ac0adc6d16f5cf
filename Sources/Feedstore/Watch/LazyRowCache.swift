/// The rows a lazy list has read, by flat position, with the layout of its sections: what
/// ``LazyLiveList`` keeps between batches.
///
/// Applying a batch moves every cached row to its new position in one pass over the cache, or
/// drops it when the batch deletes, moves or updates it, so the cache never holds a stale or
/// misplaced row; dropped rows are read again when asked for. At most ``capacity`` rows are kept
/// (those nearest the last one read), so memory is O(capacity) whatever the list's length.
struct LazyRowCache<Row> {
    /// A section: the index components its rows share, and how many rows it has.
    struct Section: Equatable, Sendable {
        var key: [FieldValue]
        var count: Int
    }

    private(set) var sections: [Section] = []
    /// The flat position of each section's first row.
    private(set) var starts: [Int] = []
    /// Rows in all sections.
    private(set) var count = 0
    /// The rows read so far, by flat position.
    private(set) var rows: [Int: Row] = [:]
    /// The most rows kept.
    let capacity: Int
    /// Rows read from the store at once.
    let pageSize: Int
    /// The position last read: eviction keeps the rows nearest to it.
    private var lastRead = 0

    init(capacity: Int, pageSize: Int) {
        precondition(pageSize >= 1 && capacity >= pageSize, "a lazy list's cache must hold at least one page")
        self.capacity = capacity
        self.pageSize = pageSize
    }

    /// The cached row at `position`, noting the read.
    mutating func row(at position: Int) -> Row? {
        lastRead = position
        return rows[position]
    }

    /// The positions of the page that holds `position`: the rows to read when it is missing.
    func page(containing position: Int) -> Range<Int> {
        let start = position - position % pageSize
        return start..<Swift.min(start + pageSize, count)
    }

    /// Keeps rows read from the store, the first at `start`, then evicts the rows farthest from
    /// the last one read beyond ``capacity``.
    mutating func store<Rows: Collection<Row>>(_ read: Rows, from start: Int) {
        for (offset, row) in read.enumerated() where start + offset < count { rows[start + offset] = row }
        guard rows.count > capacity else { return }
        let keep = rows.keys.sorted { abs($0 - lastRead) < abs($1 - lastRead) }.prefix(capacity)
        rows = rows.filter { keep.contains($0.key) }
    }

    // MARK: Sections

    /// The flat position of `path`.
    func position(of path: RowPath) -> Int { starts[path.section] + path.row }

    /// The path of the row at a flat position.
    func path(ofFlat position: Int) -> RowPath {
        var low = 0, high = starts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if starts[mid] <= position { low = mid } else { high = mid - 1 }
        }
        return RowPath(section: low, row: position - starts[low])
    }

    // MARK: Batches

    /// Takes the list to the snapshot a batch produces, whose sections are `newSections`, and
    /// returns the flat positions (new ones) whose rows changed: rows inserted, removed or
    /// shifted past, moved or updated. Rows before the first insertion or removal keep their
    /// positions and rows.
    /// - Complexity: O(c + k log k) for c cached rows and k ranges, moves and updates in the batch.
    mutating func apply(_ batch: IndexBatch, sections newSections: [Section]) -> ChangedPositions {
        let oldCount = count
        let oldStarts = starts
        setSections(newSections)
        if batch.isInitial || batch.isReset {
            rows = [:]
            return ChangedPositions(from: 0, through: Swift.max(oldCount, count), updated: [])
        }
        func oldFlat(_ path: RowPath) -> Int { oldStarts[path.section] + path.row }
        func newFlat(_ path: RowPath) -> Int { starts[path.section] + path.row }
        let removed = Self.merged(batch.deletes.map { oldFlat(RowPath(section: $0.section, row: $0.rows.lowerBound)) ..< oldFlat(RowPath(section: $0.section, row: $0.rows.lowerBound)) + $0.rows.count }
            + batch.moves.map { oldFlat($0.from) ..< oldFlat($0.from) + 1 })
        let inserted = Self.merged(batch.inserts.map { newFlat(RowPath(section: $0.section, row: $0.rows.lowerBound)) ..< newFlat(RowPath(section: $0.section, row: $0.rows.lowerBound)) + $0.rows.count }
            + batch.moves.map { newFlat($0.to) ..< newFlat($0.to) + 1 })
        let updatedOld = Set(batch.updates.map { oldFlat($0.from) })

        // One pass over the cached rows in old order: a row's position after the removals is its
        // old one less the rows removed before it; its new position skips the inserted rows.
        var moved: [Int: Row] = [:]
        moved.reserveCapacity(rows.count)
        var removal = 0, removedBefore = 0
        var insertion = 0, insertedBefore = 0
        for old in rows.keys.sorted() {
            while removal < removed.count, removed[removal].upperBound <= old {
                removedBefore += removed[removal].count
                removal += 1
            }
            if removal < removed.count, removed[removal].contains(old) { continue }
            if updatedOld.contains(old) { continue }
            var new = old - removedBefore + insertedBefore
            while insertion < inserted.count, inserted[insertion].lowerBound <= new {
                insertedBefore += inserted[insertion].count
                new += inserted[insertion].count
                insertion += 1
            }
            moved[new] = rows[old]
        }
        rows = moved

        let firstShift = Swift.min(removed.first?.lowerBound ?? .max, inserted.first?.lowerBound ?? .max)
        return ChangedPositions(from: firstShift, through: Swift.max(oldCount, count), updated: batch.updates.map { newFlat($0.to) })
    }

    private mutating func setSections(_ new: [Section]) {
        sections = new
        starts = []
        starts.reserveCapacity(new.count)
        var total = 0
        for section in new {
            starts.append(total)
            total += section.count
        }
        count = total
    }

    /// Sorted, overlapping or touching ranges joined.
    static func merged(_ ranges: [Range<Int>]) -> [Range<Int>] {
        var result: [Range<Int>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where !range.isEmpty {
            if let last = result.last, range.lowerBound <= last.upperBound {
                result[result.count - 1] = last.lowerBound ..< Swift.max(last.upperBound, range.upperBound)
            } else {
                result.append(range)
            }
        }
        return result
    }
}

/// The new positions whose rows a batch changed: every position from the first insertion or
/// removal on (rows there shifted), and the positions of updated rows.
struct ChangedPositions: Equatable {
    /// From here to the end of the list (`through`, exclusive), rows changed.
    var from: Int
    var through: Int
    var updated: [Int]

    func contains(_ position: Int) -> Bool { (from..<Swift.max(from, through)).contains(position) || updated.contains(position) }

    /// Whether a row in `range` changed.
    func overlaps(_ range: Range<Int>) -> Bool {
        range.overlaps(from..<Swift.max(from, through)) || updated.contains { range.contains($0) }
    }
}
