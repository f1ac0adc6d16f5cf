/// A record the commits since a consumer's snapshot changed, as the watched index sees it: the
/// one shape a changed row has from the change feed to the batch, keys and field numbers as
/// stored, made into names and values only for the rows a batch reports.
struct ChangedRecord {
    var id: FieldValue
    /// The encoded primary key, by which the batch reads the record.
    var primaryKey: [UInt8]
    /// The entry key before the span (nil: not a member).
    var oldKey: [UInt8]?
    /// The entry key after the span (nil: not a member).
    var newKey: [UInt8]?
    /// Catalog numbers of the fields that changed.
    var fieldIDs: Set<UInt32> = []
    /// Related entities (by name, as batches report them) whose changed records the row shows.
    var related: Set<String> = []
    /// An insert or delete happened in the span, so any field may differ.
    var allFields: Bool

    /// Whether nothing about the record changed that a batch reports.
    var isUnchanged: Bool { !allFields && fieldIDs.isEmpty && related.isEmpty }
}
