/// How a watcher presents its query. What its batches carry (values, records or positions) is
/// chosen by the call that opens it: `watch` or `watchIndexes`.
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
    /// Entities the rows display through a foreign key: a change to one of their records is an
    /// update of exactly the rows that refer to it.
    public var related: [RelatedRecords]

    /// Options for a watcher; see each property.
    public init(sectionBy: Int = 0, fields: Set<String>? = nil, window: WatchWindow? = nil, related: [RelatedRecords] = []) {
        self.sectionBy = sectionBy
        self.fields = fields
        self.window = window
        self.related = related
    }
}

/// A related entity shown by a watcher's rows: `RelatedRecords(Contact.self, through: "byContact")`
/// for messages that show their contact, where `byContact` is the watched entity's index whose
/// first component is the foreign key (`contactId`).
public struct RelatedRecords: Sendable, Hashable {
    /// The related entity's name.
    public var entity: String
    /// The watched entity's index on the foreign key.
    public var foreignKeyIndex: String

    /// Rows refer to records of `type` through the foreign key leading `index`.
    public init<R: Entity>(_ type: R.Type, through index: String) {
        entity = R.entityName
        foreignKeyIndex = index
    }
}

/// A page of a query's full order: `limit` rows from position `offset`.
public struct WatchWindow: Sendable, Hashable {
    /// The first position shown.
    public var offset: Int
    /// How many positions are shown.
    public var limit: Int

    /// The rows at positions `offset..<offset + limit`.
    public init(offset: Int, limit: Int) {
        self.offset = max(0, offset)
        self.limit = max(0, limit)
    }
}
