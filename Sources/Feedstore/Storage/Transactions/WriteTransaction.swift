import Foundation

/// A write transaction, alive for the duration of a ``Store/write(_:)-5zf6z`` closure. It reads its
/// own writes. Throwing from the closure rolls back everything it did; when writes are group
/// committed, only this closure's part is rolled back.
///
/// The closure may run more than once, when the map must grow mid-transaction or another closure
/// in its group commit throws (the first run is rolled back), so keep side effects outside it.
public final class WriteTransaction: ReadTransaction {
    /// The sequence number this transaction's changes get if it changes anything.
    let assignedSequence: UInt64
    /// Set by ``finish()`` when the transaction wrote journal entries.
    private(set) var committedSequence: UInt64?
    /// Journal entries written so far (each is written as its record changes).
    private(set) var journalEntries: UInt32 = 0
    var catalogChanged = false

    // The two lists below change for every record written, so they skip Swift's run-time
    // exclusivity checks (a few percent of a bulk insert): a transaction is used on one thread,
    // and each access to them reads or changes the list and ends before another begins.

    /// Count changes not yet applied, per index. They are applied together before the index's
    /// counts are read and before the LMDB transaction commits, so that the many changes of a
    /// transaction, and of the closures a group commit runs in it, patch each upper node of a
    /// counted tree once, not once each.
    @exclusivity(unchecked) private var deferredCounts: DeferredCounts = []
    /// Records databases in which this transaction wrote an id that did not sort last.
    @exclusivity(unchecked) var unorderedRecords: [LMDBDatabase] = []
    /// Arrays filled for every record written or deleted, kept from record to record so that
    /// writing one allocates none of them (see ``withRecordBuffers(_:)``).
    @exclusivity(unchecked) private var recordBuffers = RecordBuffers()
    /// Changes of one index held at most before they are applied (bounds the memory they take).
    static let deferredCountLimit = 4_096

    /// Whether journal entries carry the record after the change: read from the meta database
    /// for the first record written.
    private var recordImages: Bool?

    /// The journal entries kept for the commit observer (nil when it follows no entity): the
    /// group's entries so far, which this transaction appends to.
    var kept: CommittedEntries?

    /// Count changes not yet applied, by index. (A list, not a dictionary: a transaction touches
    /// a few indexes, and finding one by comparing beats hashing.)
    typealias DeferredCounts = [(index: CountedIndex, changes: [CountedIndex.Change])]

    /// - Parameters:
    ///   - deferredCounts: changes the group's earlier closures left to apply, taken over.
    ///   - buffers: record buffers an earlier transaction grew (``takeRecordBuffers()``).
    init(core: StoreCore, transaction: consuming LMDBTransaction, schema: SchemaSnapshot, sequence: UInt64,
         kept: CommittedEntries? = nil, deferredCounts: DeferredCounts = [], buffers: RecordBuffers = RecordBuffers())
    {
        self.assignedSequence = sequence
        self.kept = kept
        self.deferredCounts = deferredCounts
        self.recordBuffers = buffers
        super.init(core: core, transaction: transaction, schema: schema)
    }

    /// Hands over the record buffers, emptied, for the next transaction to grow no further;
    /// buffers a large record grew are let go instead of kept.
    func takeRecordBuffers() -> RecordBuffers {
        var buffers = recordBuffers.take()
        guard buffers.isSmall else { return RecordBuffers() }
        buffers.empty()
        return buffers
    }

    /// The journal sequence number this transaction's commit gets, or nil while it has changed
    /// nothing (a transaction that changes nothing adds no commit to the journal).
    public var commitSequence: UInt64? { journalEntries == 0 ? nil : assignedSequence }

    /// Runs `body` with the transaction's record buffers moved out, so each array is held once
    /// and grows in place, then moves them back emptied.
    func withRecordBuffers<R>(_ body: (inout RecordBuffers) throws -> R) throws -> R {
        var buffers = RecordBuffers()
        swap(&buffers, &recordBuffers)
        defer {
            buffers.empty()
            swap(&buffers, &recordBuffers)
        }
        return try body(&buffers)
    }

    /// Whether this transaction's journal entries carry the record after the change.
    func keepsRecordImages() throws -> Bool {
        if let recordImages { return recordImages }
        let kept = try access { try $0.get(core.system.meta, key: MetaKey.recordImagesFrom) } != nil
        recordImages = kept
        return kept
    }

    /// Makes the journal entries of this commit's later writes and of every later commit carry the
    /// record after the change (its stored bytes), as shippers of the journal need. Persisted: it
    /// holds for every handle on the store from then on.
    /// - Returns: the first sequence whose entries carry the record.
    @discardableResult
    public func keepRecordImagesInJournal() throws -> UInt64 {
        if let start = try MetaKey.decodeUInt64(try access { try $0.get(core.system.meta, key: MetaKey.recordImagesFrom) }, what: "journal images") {
            return start
        }
        _ = try access { try $0.put(core.system.meta, key: MetaKey.recordImagesFrom, value: MetaKey.encode(assignedSequence)) }
        recordImages = true
        return assignedSequence
    }

    /// Writes the journal entry of one changed record, encoding it into `buffers`. Entries are
    /// keyed by sequence and ordinal, so each sorts after every entry written before it and is
    /// appended. Entries of entities the commit observer follows are also kept for it.
    func appendJournal(_ record: JournalRecord, using buffers: inout RecordBuffers) throws {
        JournalKeys.appendEntry(sequence: assignedSequence, ordinal: journalEntries, to: &buffers.journalKey)
        record.encode(into: &buffers.journalValue)
        try access { try $0.putAppending(core.system.journal, key: buffers.journalKey, value: buffers.journalValue) }
        journalEntries += 1
        kept?.keep(record, of: assignedSequence)
    }

    /// Records that an entry joined (`delta` 1) or left (-1) `index`, to count it later.
    func countChange(of index: IndexSchema, key: [UInt8], delta: Int) throws {
        let counts = index.counted.counts
        let slot = deferredCounts.firstIndex { $0.index.counts == counts } ?? {
            deferredCounts.append((index.counted, []))
            return deferredCounts.count - 1
        }()
        deferredCounts[slot].changes.append(CountedIndex.Change(key: key, delta: delta))
        if deferredCounts[slot].changes.count >= Self.deferredCountLimit { try applyDeferredCounts(of: index) }
    }

    /// Writes change counts and nodes, so neither a resolved query nor a node read would stay right.
    override var keepsWhatItReads: Bool { false }

    /// Applies the deferred count changes of `index`, or of every index when nil.
    override func applyDeferredCounts(of index: IndexSchema?) throws {
        let counts = index?.counted.counts
        while let slot = deferredCounts.firstIndex(where: { counts == nil || $0.index.counts == counts }) {
            let deferred = deferredCounts.remove(at: slot)
            try access { try deferred.index.apply(deferred.changes, in: $0) }
        }
    }

    /// Hands over the count changes not yet applied, for the next closure of the group to take
    /// over (or for ``apply(_:in:)`` before the commit).
    func takeDeferredCounts() -> DeferredCounts {
        defer { deferredCounts = [] }
        return deferredCounts
    }

    /// Applies count changes a group's closures left, before the LMDB transaction commits.
    static func apply(_ deferred: DeferredCounts, in txn: borrowing LMDBTransaction) throws {
        for (index, changes) in deferred { try index.apply(changes, in: txn) }
    }

    /// Writes the commit header and the catalog if it changed. Called once, after the closure
    /// returned; the count changes stay deferred (``takeDeferredCounts()``), for the group's
    /// commit to apply.
    func finish() throws {
        try access { txn in
            if catalogChanged {
                try txn.put(core.system.meta, key: MetaKey.catalog, value: schema.catalog.encoded())
                try txn.put(core.system.meta, key: MetaKey.catalogVersion, value: MetaKey.encode(schema.catalog.version))
            }
            guard journalEntries > 0 else { return }
            // The header goes after the commit's entries, in pages the entries made dirty already.
            try txn.putAppending(core.system.journal, key: JournalKeys.headerKey(assignedSequence),
                                 value: JournalKeys.commitHeader(timestamp: Date(), entries: Int(journalEntries)))
        }
        if journalEntries > 0 { committedSequence = assignedSequence }
    }

    /// Replaces the working catalog (new fields, registrations); written by ``finish()``.
    func updateCatalog(_ change: (inout Catalog) throws -> Void, databases: [String: LMDBDatabase] = [:]) throws {
        var catalog = schema.catalog
        try change(&catalog)
        if !catalogChanged {
            catalog.version += 1
            catalogChanged = true
        }
        var entities: [String: EntitySchema] = [:]
        for entity in catalog.entities.values {
            let old = schema.entities[entity.name]
            guard let records = databases[entity.recordsDatabaseName] ?? old?.records else { continue }
            let indexes = entity.indexes.compactMap { index -> IndexSchema? in
                let known = old?.indexes.first(where: { $0.id == index.id })
                guard let db = databases[index.databaseName] ?? known?.database,
                      let counts = databases[index.countsDatabaseName] ?? known?.counted.counts else { return nil }
                return IndexSchema(catalog: index, of: entity, database: db, counts: counts)
            }
            entities[entity.name] = EntitySchema(catalog: entity, records: records, indexes: indexes)
        }
        schema = SchemaSnapshot(catalog: catalog, entities: entities)
    }
}

/// The arrays ``WriteTransaction`` reuses for each record it writes or deletes.
struct RecordBuffers {
    var primaryKey: [UInt8] = []
    var bytes: [UInt8] = []
    var indexChanges: [JournalRecord.IndexChange] = []
    var journalKey: [UInt8] = []
    var journalValue: [UInt8] = []

    /// Whether the arrays hold little enough storage to be kept from write to write.
    var isSmall: Bool {
        primaryKey.capacity + bytes.capacity + journalKey.capacity + journalValue.capacity <= Self.keptBytes
            && indexChanges.capacity <= 64
    }

    /// The bytes of storage kept at most from write to write.
    static let keptBytes = 64 << 10

    /// Hands the arrays over, leaving empty ones.
    mutating func take() -> RecordBuffers {
        defer { self = RecordBuffers() }
        return self
    }

    /// Empties the arrays, keeping their storage.
    mutating func empty() {
        primaryKey.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
        indexChanges.removeAll(keepingCapacity: true)
        journalKey.removeAll(keepingCapacity: true)
        journalValue.removeAll(keepingCapacity: true)
    }
}
