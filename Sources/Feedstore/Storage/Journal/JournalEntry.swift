import Foundation

/// One changed record in one commit: what the journal holds and watchers read.
public struct JournalEntry: Sendable, Hashable {
    /// What happened to the record.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The record was created.
        case insert
        /// The record's content changed.
        case update
        /// The record was deleted.
        case delete
    }

    /// One index the change touches (the record is a member before, after, or both), with the
    /// record's entry key before and after. Equal keys mean the record stayed in place.
    public struct IndexChange: Sendable, Hashable {
        /// The index name.
        public var index: String
        /// The record's entry key before the change, or nil when it was not a member.
        public var before: IndexKey?
        /// The record's entry key after the change, or nil when it is not a member.
        public var after: IndexKey?
    }

    /// The commit's sequence number.
    public var sequence: UInt64
    /// The entity name.
    public var entity: String
    /// The record's primary key.
    public var id: FieldValue
    /// Insert, update or delete.
    public var kind: Kind
    /// For updates, the top-level fields whose values changed, sorted by name; empty for inserts and deletes.
    public var changedFields: [String]
    /// Every index the record is in before or after the change.
    public var indexChanges: [IndexChange]
    /// The record's fields after an insert or update, when the store keeps record images in its
    /// journal (``WriteTransaction/keepRecordImagesInJournal()``); nil for deletes, for commits
    /// made before, and for entities no longer in the catalog.
    public var record: [String: FieldValue]? = nil
}

/// All entries of one commit, in the order they were written.
public struct JournalCommit: Sendable, Hashable {
    /// The commit's sequence number.
    public var sequence: UInt64
    /// When the commit was made (the writer's clock).
    public var timestamp: Date
    /// One entry per changed record, in write order.
    public var entries: [JournalEntry]
}
