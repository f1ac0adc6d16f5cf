/// The sections of a watched snapshot, in query order, with their row counts: what maps a flat
/// position to a (section, row) path. Held in memory by the watcher (one entry per section).
struct SectionList: Equatable {
    struct Section: Equatable {
        /// The encoded leading components shared by the section's rows.
        var prefix: [UInt8]
        /// The same components, decoded.
        var key: [FieldValue]
        var count: Int
    }

    private(set) var sections: [Section]
    private var starts: [Int] = []
    /// Whether sections are in descending key order (a reversed query).
    let descending: Bool

    init(_ sections: [Section], descending: Bool) {
        self.sections = sections
        self.descending = descending
        recount()
    }

    private mutating func recount() {
        starts = []
        starts.reserveCapacity(sections.count)
        var total = 0
        for section in sections {
            starts.append(total)
            total += section.count
        }
    }

    /// The one section of an unsectioned query.
    static func single(count: Int, descending: Bool) -> SectionList {
        SectionList([Section(prefix: [], key: [], count: count)], descending: descending)
    }

    var count: Int { sections.count }

    /// The rows of all sections.
    var rowCount: Int { sections.last.map { starts[starts.count - 1] + $0.count } ?? 0 }

    /// The flat position of a section's first row.
    func start(of section: Int) -> Int { starts[section] }

    func index(of prefix: [UInt8]) -> Int? { sections.firstIndex { $0.prefix == prefix } }

    /// The path of the row at flat position `position`.
    func path(ofFlat position: Int) -> RowPath {
        var low = 0, high = starts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if starts[mid] <= position { low = mid } else { high = mid - 1 }
        }
        return RowPath(section: low, row: position - starts[low])
    }

    /// Sets a section's count: removes it at 0, inserts it in order when new.
    mutating func setCount(_ count: Int, of prefix: [UInt8], key: @autoclosure () throws -> [FieldValue]) rethrows {
        if let i = index(of: prefix) {
            if count == 0 { sections.remove(at: i) } else { sections[i].count = count }
        } else if count > 0 {
            let at = sections.firstIndex { descending ? $0.prefix.sortsBefore(prefix) : prefix.sortsBefore($0.prefix) }
                ?? sections.count
            sections.insert(Section(prefix: prefix, key: try key(), count: count), at: at)
        }
        recount()
    }
}
