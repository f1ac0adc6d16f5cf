/// What a watcher shows of its query's list, and the one place that converts between the three
/// ways of naming one of its rows:
/// - a **list position**: the row's place in the query's whole order, from 0 (what the counted
///   index answers, and what a window's offset counts);
/// - a **shown position**: its place among the rows shown, from 0 across sections (what a lazy
///   list's and a client's `rows` request count); without a window, the list position;
/// - a **path**: its section and row among the rows shown (what a batch names).
///
/// A batch goes from one layout (old) to the next (new); deletes and move sources are named in
/// the old one, inserts and move destinations in the new one.
struct ListLayout: Equatable {
    /// The sections of the whole list.
    let sections: SectionList
    /// The list positions shown.
    let visible: Range<Int>
    /// The sections shown: the whole list's, cut to ``visible``.
    let shown: SectionList

    /// The layout of a list whose sections are `sections`, seen through `window` (all of it
    /// without one).
    init(sections: SectionList, window: WatchWindow?) {
        self.sections = sections
        visible = Self.visible(window, count: sections.rowCount)
        shown = sections.clipped(to: visible)
    }

    /// A layout that shows nothing: what a consumer holds before a watcher's first batch.
    static func empty(descending: Bool) -> ListLayout {
        ListLayout(sections: SectionList([], descending: descending), window: nil)
    }

    /// The list positions a window shows of a list of `count` rows (all of them without a window).
    static func visible(_ window: WatchWindow?, count: Int) -> Range<Int> {
        guard let window else { return 0..<count }
        let start = min(window.offset, count)
        return start..<(window.limit >= count - start ? count : start + window.limit)
    }

    /// Rows in the whole list.
    var listCount: Int { sections.rowCount }
    /// Rows shown.
    var shownCount: Int { visible.count }

    // MARK: List and shown positions

    /// The shown position of the row at list position `position`; nil when it is not shown.
    func shownPosition(ofList position: Int) -> Int? {
        visible.contains(position) ? position - visible.lowerBound : nil
    }

    /// The list position of the row at shown position `position`.
    func listPosition(ofShown position: Int) -> Int { visible.lowerBound + position }

    // MARK: Paths

    /// Whether `path` names a row shown.
    func contains(_ path: RowPath) -> Bool {
        shown.sections.indices.contains(path.section) && path.row >= 0 && path.row < shown.sections[path.section].count
    }

    /// The shown position of a row shown at `path` (see ``contains(_:)``).
    func shownPosition(of path: RowPath) -> Int { shown.start(of: path.section) + path.row }

    /// The path of the row at shown position `position`.
    func path(ofShown position: Int) -> RowPath { shown.path(ofFlat: position) }

    /// The list position of the row at `path`; nil when no row is shown there.
    func listPosition(of path: RowPath) -> Int? {
        contains(path) ? listPosition(ofShown: shownPosition(of: path)) : nil
    }

    /// The path of the row at list position `position`; nil when it is not shown.
    func path(ofList position: Int) -> RowPath? { shownPosition(ofList: position).map(path(ofShown:)) }

    /// The rows at shown positions `positions`, section by section, as the first row's path and
    /// how many rows of its section follow it (cut to the rows shown).
    func runs(ofShown positions: Range<Int>) -> [(start: RowPath, count: Int)] {
        var runs: [(start: RowPath, count: Int)] = []
        var next = max(positions.lowerBound, 0)
        let end = min(positions.upperBound, shownCount)
        while next < end {
            let path = path(ofShown: next)
            let count = min(end - next, shown.sections[path.section].count - path.row)
            runs.append((path, count))
            next += count
        }
        return runs
    }
}

extension ListLayout {
    /// What must hold of a layout: the rows shown are the window's positions of the list, the
    /// shown sections count them, and every conversion goes there and back (checked over at
    /// most `sample` positions, spread over the list). Tests run it after randomized steps.
    func checkInvariants(sample: Int = 200) -> [String] {
        var problems: [String] = []
        if visible.lowerBound < 0 || visible.upperBound > listCount { problems.append("shows \(visible) of a list of \(listCount)") }
        if shown.rowCount != shownCount { problems.append("shown sections hold \(shown.rowCount) rows, the window \(shownCount)") }
        let step = max(1, listCount / max(1, sample))
        for position in stride(from: 0, to: listCount, by: step) {
            guard let found = path(ofList: position) else {
                if visible.contains(position) { problems.append("list position \(position) is shown but has no path") }
                continue
            }
            if !visible.contains(position) { problems.append("list position \(position) is not shown but has path \(found)") }
            if !contains(found) { problems.append("path \(found) of list position \(position) names no row shown") }
            if listPosition(of: found) != position { problems.append("path \(found) leads back to \(String(describing: listPosition(of: found))), not \(position)") }
            if let shownAt = shownPosition(ofList: position), path(ofShown: shownAt) != found || shownPosition(of: found) != shownAt {
                problems.append("shown position \(shownAt) and path \(found) disagree")
            }
        }
        return problems
    }
}
