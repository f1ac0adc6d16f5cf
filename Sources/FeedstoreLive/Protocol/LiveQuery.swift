import Feedstore

/// What a subscription watches, as the client's `subscribe` frame gives it: the fields of
/// `storectl watch`, checked against the store's catalog before a watcher opens.
public struct LiveQuery: Sendable, Hashable {
    /// What a batch carries: records (`objects`), or positions only (`indexes`), whose rows the
    /// client asks for with `rows` frames.
    public enum Mode: String, Sendable, Hashable {
        case objects, indexes
    }

    public var entity: String
    public var index: String
    /// Leading components, as JSON gives them (converted to the catalog's kinds on subscribe).
    public var prefix: [FieldValue]
    /// The first and last components after the prefix, both included, in index order.
    public var from: [FieldValue]?
    public var to: [FieldValue]?
    public var reverse: Bool
    public var sectionBy: Int
    /// The window: `limit` rows from `offset` (no window when `limit` is nil).
    public var offset: Int
    public var limit: Int?
    /// The fields whose updates are delivered (all when nil).
    public var fields: [String]?
    public var mode: Mode
    /// The condition the range's records must meet to be rows (``IndexCondition``'s JSON form);
    /// nil for all of them. It narrows the range: it never reaches rows outside it.
    public var filter: IndexCondition?

    public init(entity: String, index: String, prefix: [FieldValue] = [], from: [FieldValue]? = nil, to: [FieldValue]? = nil,
                reverse: Bool = false, sectionBy: Int = 0, offset: Int = 0, limit: Int? = nil, fields: [String]? = nil,
                mode: Mode = .objects, filter: IndexCondition? = nil)
    {
        self.filter = filter
        self.entity = entity
        self.index = index
        self.prefix = prefix
        self.from = from
        self.to = to
        self.reverse = reverse
        self.sectionBy = sectionBy
        self.offset = offset
        self.limit = limit
        self.fields = fields
        self.mode = mode
    }
}
