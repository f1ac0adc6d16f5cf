/// The sections of a watched snapshot, in query order, with their row counts: what maps a
/// position (from 0 across its sections) to a (section, row) path. Held in memory by the watcher
/// (one entry per section); ``ListLayout`` is what the rest of the watch code converts through.
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

    /// Whether this is the one section of an unsectioned query (kept even when empty).
    var isSingle: Bool { sections.count == 1 && sections[0].prefix.isEmpty }

    /// The sections of the rows at flat positions `range`, with their counts cut to it: what a
    /// window shows. O(log s + sections shown).
    func clipped(to range: Range<Int>) -> SectionList {
        if range == 0..<rowCount { return self }
        if isSingle { return .single(count: range.count, descending: descending) }
        if range.isEmpty { return SectionList([], descending: descending) }
        let low = sections.indices.partitionPoint { starts[$0] + sections[$0].count > range.lowerBound }
        var shown: [Section] = []
        var i = low
        while i < sections.count, starts[i] < range.upperBound {
            var section = sections[i]
            section.count = min(starts[i] + section.count, range.upperBound) - max(starts[i], range.lowerBound)
            shown.append(section)
            i += 1
        }
        return SectionList(shown, descending: descending)
    }

    /// The encoded leading `components` of an entry key: the prefix its section groups by.
    static func prefix(of key: [UInt8], components: Int) throws -> [UInt8] {
        guard components > 0 else { return [] }
        return try key.withUnsafeBytes { Array($0.prefix(try KeyDecoder.lengthOfComponents(components, in: $0))) }
    }

    /// The path of the row at flat position `position`.
    func path(ofFlat position: Int) -> RowPath {
        // The last section that starts at or before the position.
        let section = (1..<Swift.max(1, starts.count)).partitionPoint { starts[$0] > position } - 1
        return RowPath(section: section, row: position - starts[section])
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
