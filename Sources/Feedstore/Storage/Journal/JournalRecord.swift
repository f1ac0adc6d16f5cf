import Foundation

/// The stored form of a journal entry, with catalog numbers instead of names.
struct JournalRecord: Equatable {
    struct IndexChange: Equatable {
        var indexID: UInt32
        var before: [UInt8]?
        var after: [UInt8]?
    }

    var entityID: UInt32
    var primaryKey: [UInt8]
    var kind: JournalEntry.Kind
    var changedFieldIDs: [UInt32]
    var indexChanges: [IndexChange]
    /// The record's stored bytes after an insert or update, kept when the store keeps record
    /// images (format 3, ``Store/keepRecordImagesInJournal()``); nil otherwise and for deletes.
    var record: [UInt8]? = nil

    /// Appends the stored form to `out`.
    func encode(into out: inout [UInt8]) {
        RecordCodec.appendVarint(UInt64(entityID), to: &out)
        appendBytes(primaryKey, to: &out)
        out.append(kind == .insert ? 0 : kind == .update ? 1 : 2)
        RecordCodec.appendVarint(UInt64(changedFieldIDs.count), to: &out)
        for id in changedFieldIDs { RecordCodec.appendVarint(UInt64(id), to: &out) }
        RecordCodec.appendVarint(UInt64(indexChanges.count), to: &out)
        for change in indexChanges {
            RecordCodec.appendVarint(UInt64(change.indexID), to: &out)
            out.append((change.before != nil ? 1 : 0) | (change.after != nil ? 2 : 0))
            if let before = change.before { appendBytes(before, to: &out) }
            if let after = change.after { appendBytes(after, to: &out) }
        }
        if let record { appendBytes(record, to: &out) }
    }

    private func appendBytes(_ bytes: [UInt8], to out: inout [UInt8]) {
        RecordCodec.appendVarint(UInt64(bytes.count), to: &out)
        out.append(contentsOf: bytes)
    }

    /// The entity number of a stored entry, read without decoding the rest.
    static func entityID(of bytes: UnsafeRawBufferPointer) throws -> UInt32 {
        var r = ByteReader(bytes, what: "journal entry")
        let id = try r.varint()
        guard id <= UInt32.max else { throw r.failure("bad entry header") }
        return UInt32(id)
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> JournalRecord {
        var r = ByteReader(bytes, what: "journal entry")
        let entityID = try r.varint()
        let primaryKey = Array(try r.bytes(try r.count()))
        let kindByte = try r.byte()
        guard kindByte <= 2, entityID <= UInt32.max else { throw r.failure("bad entry header") }
        let kind: JournalEntry.Kind = kindByte == 0 ? .insert : kindByte == 1 ? .update : .delete
        var fields: [UInt32] = []
        for _ in 0..<(try r.count()) {
            let id = try r.varint()
            guard id <= UInt32.max else { throw r.failure("bad field number") }
            fields.append(UInt32(id))
        }
        var changes: [IndexChange] = []
        for _ in 0..<(try r.count()) {
            let id = try r.varint()
            let flags = try r.byte()
            guard id <= UInt32.max, flags <= 3 else { throw r.failure("bad index change") }
            let before = flags & 1 != 0 ? Array(try r.bytes(try r.count())) : nil
            let after = flags & 2 != 0 ? Array(try r.bytes(try r.count())) : nil
            changes.append(IndexChange(indexID: UInt32(id), before: before, after: after))
        }
        // Format 3: the record after the change may follow.
        let record = r.isAtEnd ? nil : Array(try r.bytes(try r.count()))
        guard r.isAtEnd else { throw r.failure("trailing bytes") }
        guard record == nil || kind != .delete else { throw r.failure("a delete carries a record") }
        return JournalRecord(entityID: UInt32(entityID), primaryKey: primaryKey, kind: kind,
                             changedFieldIDs: fields, indexChanges: changes, record: record)
    }

    /// Names the numbers through the catalog; numbers the catalog no longer has print as `#n`.
    func resolved(sequence: UInt64, catalog: Catalog) throws -> JournalEntry {
        let entity = catalog.entities.values.first { $0.id == entityID }
        let id = try KeyDecoder.decode(primaryKey).first?.value ?? .null
        return JournalEntry(
            sequence: sequence,
            entity: entity?.name ?? "#\(entityID)",
            id: id,
            kind: kind,
            changedFields: changedFieldIDs.map { fid in entity?.field(id: fid)?.name ?? "#\(fid)" }.sorted(),
            indexChanges: indexChanges.map { change in
                JournalEntry.IndexChange(
                    index: entity?.indexes.first { $0.id == change.indexID }?.definition.name ?? "#\(change.indexID)",
                    before: change.before.map(IndexKey.init), after: change.after.map(IndexKey.init))
            })
    }
}

/// Keys of the journal database: sequence (8 bytes big-endian) then ordinal within the commit
/// (4 bytes). A commit's entries take ordinals 0, 1, …; its header takes the last ordinal, so it
/// sorts after them and the journal's last key names the newest commit.
enum JournalKeys {
    /// The ordinal of a commit's header.
    static let headerOrdinal = UInt32.max

    /// Appends the key of entry `ordinal` of commit `sequence` to `key`.
    static func appendEntry(sequence: UInt64, ordinal: UInt32, to key: inout [UInt8]) {
        key.appendBigEndian(sequence)
        key.appendBigEndian(ordinal)
    }

    /// The key of commit `sequence`'s header.
    static func headerKey(_ sequence: UInt64) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(12)
        appendEntry(sequence: sequence, ordinal: headerOrdinal, to: &key)
        return key
    }

    /// Whether a journal key is a commit's header rather than one of its entries.
    static func isHeader(_ key: UnsafeRawBufferPointer) throws -> Bool {
        guard key.count == 12 else { throw FeedstoreError.corruptData(what: "journal key", reason: "\(key.count) bytes, expected 12") }
        return key[8] == 0xFF && key[9] == 0xFF && key[10] == 0xFF && key[11] == 0xFF
    }

    /// The first 8 bytes of a commit's keys: a seek there lands on its first entry (or header).
    static func sequenceKey(_ sequence: UInt64) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(8)
        key.appendBigEndian(sequence)
        return key
    }

    static func sequence(from key: UnsafeRawBufferPointer) throws -> UInt64 {
        guard key.count >= 8 else { throw FeedstoreError.corruptData(what: "journal key", reason: "\(key.count) bytes") }
        return (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(key[$1]) }
    }

    /// Commit header value: timestamp (seconds since 2001, 8 bytes LE) and entry count (varint).
    static func commitHeader(timestamp: Date, entries: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.appendLittleEndian(timestamp.timeIntervalSinceReferenceDate.bitPattern)
        RecordCodec.appendVarint(UInt64(entries), to: &out)
        return out
    }

    static func decodeCommitHeader(_ bytes: UnsafeRawBufferPointer) throws -> (timestamp: Date, entries: Int) {
        var r = ByteReader(bytes, what: "commit header")
        let time = Date(timeIntervalSinceReferenceDate: Double(bitPattern: try r.fixed64()))
        let count = try r.varint()
        guard r.isAtEnd, count <= UInt64(Int32.max) else { throw r.failure("bad commit header") }
        return (time, Int(count))
    }
}
