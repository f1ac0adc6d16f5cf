/// How a watcher presents its query.
public struct WatchOptions: Sendable, Hashable {
    /// Sections are the runs of rows that share their first `sectionBy` index components
    /// (0: one section holding every row).
    public var sectionBy: Int
    /// When set, only updates that change one of these fields are delivered (moves, inserts and
    /// deletes always are): a list that shows titles need not redraw when a read flag flips.
    public var fields: Set<String>?
    /// When set, the watcher shows only these positions of the full order (then sectioned):
    /// rows pushed in or out by changes elsewhere are inserts and deletes.
    public var window: WatchWindow?

    public init(sectionBy: Int = 0, fields: Set<String>? = nil, window: WatchWindow? = nil) {
        self.sectionBy = sectionBy
        self.fields = fields
        self.window = window
    }
}

/// A page of a query's full order: `limit` rows from position `offset`.
public struct WatchWindow: Sendable, Hashable {
    public var offset: Int
    public var limit: Int

    /// The rows at positions `offset..<offset + limit`.
    public init(offset: Int, limit: Int) {
        self.offset = max(0, offset)
        self.limit = max(0, limit)
    }
}
