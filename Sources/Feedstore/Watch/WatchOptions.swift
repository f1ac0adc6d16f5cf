/// How a watcher presents its query.
public struct WatchOptions: Sendable, Hashable {
    /// Sections are the runs of rows that share their first `sectionBy` index components
    /// (0: one section holding every row).
    public var sectionBy: Int
    /// When set, only updates that change one of these fields are delivered (moves, inserts and
    /// deletes always are): a list that shows titles need not redraw when a read flag flips.
    public var fields: Set<String>?

    public init(sectionBy: Int = 0, fields: Set<String>? = nil) {
        self.sectionBy = sectionBy
        self.fields = fields
    }
}
