/// What every kind of change batch begins with: the snapshots it goes between, whether it is a
/// whole snapshot, and its section changes. ``ChangeBatch``, ``DynamicChangeBatch`` and
/// ``IndexBatch`` each hold one, and ``RowChangeBatch`` shows its fields as the batch's own
/// (`batch.fromSequence`).
public struct BatchHeader: Sendable, Hashable {
    /// The sequence of the snapshot the batch starts from (0 for an initial batch).
    public var fromSequence: UInt64
    /// The sequence of the snapshot the batch produces.
    public var toSequence: UInt64
    /// The first batch of a watcher: the whole snapshot as inserts.
    public var isInitial: Bool
    /// The watcher fell behind the journal's retention: the batch is the whole new snapshot as
    /// inserts; discard everything shown before.
    public var isReset: Bool
    /// Old indexes of sections that are gone.
    public var sectionDeletes: [Int]
    /// New sections, by new index, with the index components they group by.
    public var sectionInserts: [SectionInsert]
    /// The window the batch's state shows, for a watcher with one: the first row is at this
    /// offset of the whole order. A window moved by `setWindow` shows from the batch that
    /// carries it (a batch may carry only a moved window).
    public var window: WatchWindow?

    /// A header; see each property.
    public init(fromSequence: UInt64, toSequence: UInt64, isInitial: Bool = false, isReset: Bool = false,
                sectionDeletes: [Int] = [], sectionInserts: [SectionInsert] = [], window: WatchWindow? = nil)
    {
        self.fromSequence = fromSequence
        self.toSequence = toSequence
        self.isInitial = isInitial
        self.isReset = isReset
        self.sectionDeletes = sectionDeletes
        self.sectionInserts = sectionInserts
        self.window = window
    }
}
