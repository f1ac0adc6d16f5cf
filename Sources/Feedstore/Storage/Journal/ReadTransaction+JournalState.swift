import Foundation

/// What a read transaction tells of the journal as stored and of the store it belongs to: its
/// bounds, its durable cursors, whether entries carry records, the store's identifier.
/// Maintenance (inspect, verify) reads them here; reading the commits themselves belongs to the
/// change feed (``ReadTransaction/journal(after:limit:)``).
extension ReadTransaction {
    /// The retained range of the journal as of this transaction.
    /// - Complexity: O(log n) for n retained entries (two lookups).
    public func journalBounds() throws -> JournalBounds {
        try access { try core.system.journalBounds(in: $0) }
    }

    /// The store's identifier, made with the store (nil for a store of format 2 opened read-only,
    /// which gets one when first opened for writing).
    public func storeIdentifier() throws -> UUID? {
        guard let bytes = try access({ try $0.get(core.system.meta, key: MetaKey.storeIdentifier) }) else { return nil }
        guard bytes.count == 16 else { throw FeedstoreError.corruptData(what: "meta store.id", reason: "\(bytes.count) bytes, expected 16") }
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// The first sequence whose journal entries carry the record after the change, or nil when
    /// the store does not keep record images (``WriteTransaction/keepRecordImagesInJournal()``).
    public func recordImagesStart() throws -> UInt64? {
        try MetaKey.decodeUInt64(try access { try $0.get(core.system.meta, key: MetaKey.recordImagesFrom) }, what: "journal images")
    }

    /// The named durable cursors and the sequence each has acknowledged.
    public func journalCursors() throws -> [(name: String, position: UInt64)] {
        try access { try DurableCursors(core: core).all(in: $0) }
    }
}
