/// The store's own LMDB databases, beside one `records:` database per entity and one `index:`
/// database per secondary index.
struct SystemDatabases: Sendable {
    static let metaName = "feedstore.meta"
    static let journalName = "feedstore.journal"
    static let cursorsName = "feedstore.cursors"
    /// Format 1 kept commit headers here; opening such a store for writing moves them into the journal.
    static let formatOneCommitsName = "feedstore.commits"

    /// Format version, catalog and the first retained sequence.
    let meta: LMDBDatabase
    /// Journal entries and commit headers, keyed by (sequence, ordinal) (``JournalKeys``).
    let journal: LMDBDatabase
    /// Durable journal cursors: name → sequence consumed through.
    let cursors: LMDBDatabase
}

/// Keys in the meta database.
enum MetaKey {
    static let format: [UInt8] = Array("format".utf8)
    static let catalog: [UInt8] = Array("catalog".utf8)
    static let catalogVersion: [UInt8] = Array("catalog.version".utf8)
    /// Format 1 wrote the newest sequence here on every commit; format 2 reads it from the journal.
    static let formatOneLastSequence: [UInt8] = Array("journal.last".utf8)
    static let firstRetained: [UInt8] = Array("journal.first".utf8)
    /// The store's identifier: 16 bytes of a random UUID, made with the store (format 3).
    static let storeIdentifier: [UInt8] = Array("store.id".utf8)
    /// The first sequence whose journal entries carry the record after the change (format 3).
    static let recordImagesFrom: [UInt8] = Array("journal.images".utf8)
    /// A replica's state (``ReplicaState``); absent in stores that are no replica.
    static let replica: [UInt8] = Array("replica".utf8)

    static func encode(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian) { Array($0) } }

    static func decodeUInt64(_ bytes: [UInt8]?, what: String) throws -> UInt64? {
        guard let bytes else { return nil }
        guard bytes.count == 8 else { throw FeedstoreError.corruptData(what: "meta \(what)", reason: "\(bytes.count) bytes, expected 8") }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
