/// A section of a batch's new snapshot: its new index, and the index components it groups by.
/// Every kind of batch (``ChangeBatch``, ``DynamicChangeBatch``, ``IndexBatch``) lists these.
public struct SectionInsert: Sendable, Hashable {
    /// The section's new index.
    public var index: Int
    /// The index components the section groups by.
    public var key: [FieldValue]

    /// The section at `index`, grouping rows by `key`.
    public init(index: Int, key: [FieldValue]) {
        self.index = index
        self.key = key
    }
}
