import Foundation

/// One entry of an index (or of the primary-key order), with its record.
public struct IndexEntry: Sendable, Hashable {
    /// The index components (empty in primary-key order).
    public var key: [FieldValue]
    /// The primary key.
    public var id: FieldValue
    /// The record's fields by name.
    public var record: [String: FieldValue]
}

extension ReadTransaction {
    /// The record with `id`, or nil.
    /// - Throws: ``FeedstoreError/decodingFailed(entity:id:reason:)`` when the stored record does
    ///   not decode as `E`; ``FeedstoreError/corruptData(what:reason:)`` for malformed bytes.
    /// - Complexity: O(log n).
    public func get<E: Entity>(_ type: E.Type, id: E.ID) throws -> E? {
        let id = id.fieldValue
        return try withRecord(entity: E.entityName, id: id) { try decodeEntity(E.self, $0, of: &$1, id: id) }
    }

    /// The fields of the record with `id`, read without the application's types.
    /// - Complexity: O(log n).
    /// - Throws: ``FeedstoreError/invalidRange(entity:index:reason:)`` for an id that is not of
    ///   the primary key's kind and does not convert to it without loss.
    public func record(entity name: String, id: FieldValue) throws -> [String: FieldValue]? {
        let id = try entity(name).catalog.primaryKeyComponent(id)
        return try withRecord(entity: name, id: id) { try decodeFields($0, of: &$1, id: id) }
    }

    /// The fields of the record with `id` as JSON text (``FieldValue/jsonText`` of the fields
    /// as one object), written straight from the stored bytes, or nil.
    /// - Complexity: O(log n).
    /// - Throws: ``FeedstoreError/invalidRange(entity:index:reason:)`` for an id of the wrong kind.
    public func recordJSON(entity name: String, id: FieldValue) throws -> String? {
        let id = try entity(name).catalog.primaryKeyComponent(id)
        return try withRecord(entity: name, id: id) { try recordJSON($0, of: &$1, id: id) }
    }

    /// Reads the records stored under `keys` in one pass, in their order, with the entity looked
    /// up once, lending each record's stored bytes (nil where none is) to `visit`: a watcher's
    /// batch reads the rows it names this way, by the keys the journal and the index hold.
    func readRecords(entity name: String, keys: [RowKey],
                     _ visit: (_ stored: UnsafeRawBufferPointer?, _ entity: inout EntitySchema, _ id: FieldValue) throws -> Void) throws
    {
        var entity = try entity(name)
        let records = entity.records
        try access { txn in
            for key in keys {
                try visit(try key.primaryKey.withUnsafeBytes { try txn.borrowedValue(records, key: $0) }, &entity, key.id)
            }
        }
    }

    /// The fields of the record stored under `primaryKey` (whose value is `id`), or nil.
    func record(entity name: String, primaryKey: [UInt8], id: FieldValue) throws -> [String: FieldValue]? {
        var fields: [String: FieldValue]?
        try readRecords(entity: name, keys: [RowKey(id: id, primaryKey: primaryKey)]) { stored, entity, id in
            fields = try stored.map { try decodeFields($0, of: &entity, id: id) }
        }
        return fields
    }

    /// Lends the stored bytes of the record with `id` to `body`; nil when there is none (or
    /// `id` cannot be a key).
    private func withRecord<R>(entity name: String, id: FieldValue,
                               _ body: (UnsafeRawBufferPointer, inout EntitySchema) throws -> R) throws -> R?
    {
        guard let key = try? KeyEncoding.encode([id]) else { return nil }
        var entity = try entity(name)
        return try access { txn in try txn.withValue(entity.records, key: key) { try body($0, &entity) } }
    }

    /// How many records the entity has.
    /// - Complexity: O(1).
    public func count<E: Entity>(_ type: E.Type) throws -> Int {
        try count(entity: E.entityName)
    }

    /// How many records the entity has, by name.
    /// - Complexity: O(1).
    public func count(entity name: String) throws -> Int {
        let entity = try entity(name)
        return try access { try $0.statistics(entity.records).entries }
    }

    /// How many entries of `index` lie in `range`.
    /// - Complexity: O(log n), from the index's counts.
    public func count<E: Entity>(_ type: E.Type, index: String, range: IndexRange = .all) throws -> Int {
        try count(entity: E.entityName, index: index, range: range)
    }

    /// How many entries of `index` of the entity named `name` lie in `range` (and, with a
    /// `filter`, have records that meet it).
    /// - Complexity: O(log n), from the index's counts; a filter's first count in a transaction
    ///   makes a pass over the range.
    public func count(entity name: String, index: String, range: IndexRange = .all, filter: IndexCondition? = nil) throws -> Int {
        try resolve(entity: name, index: index, range: range, filter: filter).count
    }

    /// Records in the order of `index` within `range` that meet `filter`, skipping `offset` and taking at most `limit`.
    /// - Complexity: O(log n + k) for k records returned (the offset is found through the counts);
    ///   with a filter, O(r) for the r entries up to the last row, unless the transaction has
    ///   counted the filtered query (then as without one).
    public func query<E: Entity>(_ type: E.Type, index: String, range: IndexRange = .all, reverse: Bool = false,
                                 offset: Int = 0, limit: Int? = nil, filter: IndexCondition? = nil) throws -> [E]
    {
        try rows(entity: E.entityName, index: index, range: range, reverse: reverse, offset: offset, limit: limit, filter: filter) {
            try decodeEntity(E.self, $0, of: &$1)
        }
    }

    /// Entries with their records, read without the application's types: in the order of
    /// `index`, or in primary-key order when `index` is nil (then `range` is over the key);
    /// only those whose records meet `filter`, when given.
    /// - Complexity: O(log n + k) for k entries returned through an index; O(log n + offset + k)
    ///   in primary-key order, which has no counts; with a filter, as ``query(_:index:range:reverse:offset:limit:filter:)``.
    public func entries(entity name: String, index: String?, range: IndexRange = .all, reverse: Bool = false,
                        offset: Int = 0, limit: Int? = nil, filter: IndexCondition? = nil) throws -> [IndexEntry]
    {
        try rows(entity: name, index: index, range: range, reverse: reverse, offset: offset, limit: limit, filter: filter) {
            try indexEntry($0, of: &$1)
        }
    }

    /// A walked entry's record as `E`.
    func decodeEntity<E: Entity>(_ type: E.Type, _ entry: ScannedEntry, of entity: inout EntitySchema) throws -> E {
        try decodeEntity(E.self, entry.record, of: &entity, id: entry.idForMessages)
    }

    /// A walked entry with its record's fields by name.
    func indexEntry(_ entry: ScannedEntry, of entity: inout EntitySchema) throws -> IndexEntry {
        IndexEntry(key: try entry.components(), id: try entry.id(), record: try decodeFields(entry.record, of: &entity, id: entry.idForMessages))
    }

    /// Walks a range as ``entries(entity:index:range:reverse:offset:limit:filter:)`` does, making each
    /// row from its entry: the key and the record's stored bytes, borrowed.
    func rows<Row>(entity name: String, index: String?, range: IndexRange, reverse: Bool, offset: Int, limit: Int?,
                   filter: IndexCondition? = nil, _ make: (_ entry: ScannedEntry, _ entity: inout EntitySchema) throws -> Row) throws -> [Row]
    {
        var rows = RowCollector<Row>(capacity: limit.map { Swift.min($0, 1_024) } ?? 16)
        try walk(entity: name, index: index, range: range, reverse: reverse, offset: offset, limit: limit, filter: filter) { entry, entity in
            rows.append(try make(entry, &entity))
        }
        return rows.array()
    }

    /// Walks a range as ``entries(entity:index:range:reverse:offset:limit:filter:)`` does, lending each
    /// entry (its key and its record's stored bytes) to `visit`; nothing is gathered.
    func walk(entity name: String, index: String?, range: IndexRange, reverse: Bool, offset: Int, limit: Int?,
              filter: IndexCondition? = nil, _ visit: (_ entry: ScannedEntry, _ entity: inout EntitySchema) throws -> Void) throws
    {
        var entity = try entity(name)
        let componentCount = try index.map { try entity.index(named: $0).definition.components.count }
        try scan(entity: name, index: index, range: range, reverse: reverse, offset: offset, limit: limit, filter: filter) { key, value in
            guard let componentCount else {
                return try visit(ScannedEntry(key: key, primaryKeyStart: 0, record: value), &entity)
            }
            try row(forKey: key, components: componentCount, entity: &entity, index: index!, visit)
        }
    }

    /// The row of the record an index entry names, whose key has `components` index components.
    func row<Row>(forKey key: UnsafeRawBufferPointer, components: Int, entity: inout EntitySchema, index: String,
                  _ make: (_ entry: ScannedEntry, _ entity: inout EntitySchema) throws -> Row) throws -> Row
    {
        let start = try KeyDecoder.lengthOfComponents(components, in: key)
        return try make(ScannedEntry(key: key, primaryKeyStart: start, record: try recordBytes(forKey: key, primaryKeyStart: start, entity: entity, index: index)),
                        &entity)
    }

    /// The stored bytes of the record an index entry key names, whose primary key starts at `start`.
    @inline(__always)
    private func recordBytes(forKey key: UnsafeRawBufferPointer, primaryKeyStart start: Int, entity: EntitySchema, index: String) throws
        -> UnsafeRawBufferPointer
    {
        let records = entity.records
        guard let bytes = try access({ try $0.borrowedValue(records, key: UnsafeRawBufferPointer(rebasing: key[start...])) }) else {
            let id = ScannedEntry(key: key, primaryKeyStart: start, record: UnsafeRawBufferPointer(start: nil, count: 0)).idForMessages
            throw FeedstoreError.corruptData(what: "index \(entity.name).\(index)", reason: "entry for missing record \(id.jsonText)")
        }
        return bytes
    }

    /// Whether the record stored as `bytes` passes `filter`.
    func passes(_ filter: RecordFilter, _ bytes: UnsafeRawBufferPointer, of entity: inout EntitySchema, id: @autoclosure () -> FieldValue?) throws -> Bool {
        try withStoredRecord(bytes, of: &entity, id: id) { try filter.holds(in: $0) }
    }

    /// Whether the record an entry key of `query`'s index names passes `filter`.
    func passes(_ filter: RecordFilter, entryKey key: UnsafeRawBufferPointer, of query: ResolvedQuery) throws -> Bool {
        var entity = query.entity
        let start = try KeyDecoder.lengthOfComponents(query.index.definition.components.count, in: key)
        let bytes = try recordBytes(forKey: key, primaryKeyStart: start, entity: entity, index: query.index.definition.name)
        return try passes(filter, bytes, of: &entity,
                          id: ScannedEntry(key: key, primaryKeyStart: start, record: UnsafeRawBufferPointer(start: nil, count: 0)).idForMessages)
    }

    /// The primary keys in `range` of `index` (or of the primary-key order), in order, skipping
    /// `offset` and taking at most `limit`, read from the index alone.
    /// - Complexity: O(log n + k) through an index, for k keys returned.
    func ids(entity name: String, index: String?, range: IndexRange, reverse: Bool = false, offset: Int = 0,
             limit: Int? = nil, filter: IndexCondition? = nil) throws -> [FieldValue]
    {
        try rowKeys(entity: name, index: index, range: range, reverse: reverse, offset: offset, limit: limit, filter: filter).map(\.id)
    }

    /// A row's primary key, decoded and as stored.
    struct RowKey {
        var id: FieldValue
        var primaryKey: [UInt8]
        static let none = RowKey(id: .null, primaryKey: [])

        init(id: FieldValue, primaryKey: [UInt8]) {
            self.id = id
            self.primaryKey = primaryKey
        }

        /// The primary key of an entry key: its last component.
        init(entryKey key: UnsafeRawBufferPointer) throws {
            var decoder = KeyDecoder(key)
            var start = 0, id = FieldValue.null
            while !decoder.isAtEnd {
                start = decoder.offset
                id = try decoder.next().value
            }
            self.init(id: id, primaryKey: Array(key[(key.startIndex + start)...]))
        }
    }

    /// ``ids(entity:index:range:reverse:offset:limit:)`` with each key as stored too.
    func rowKeys(entity name: String, index: String?, range: IndexRange, reverse: Bool = false, offset: Int = 0,
                 limit: Int? = nil, filter: IndexCondition? = nil) throws -> [RowKey]
    {
        var keys: [RowKey] = []
        try scan(entity: name, index: index, range: range, reverse: reverse, offset: offset, limit: limit, filter: filter) { key, _ in
            keys.append(try RowKey(entryKey: key))
        }
        return keys
    }

    /// Walks the entries of a range in order, lending each key and value to `body` (for an
    /// index, the value is the entry's, not the record). With a filter, only the entries whose
    /// records pass it: through the filtered order when this transaction has one for the query,
    /// else by testing the range's records as the walk meets them.
    func scan(entity name: String, index: String?, range: IndexRange, reverse: Bool, offset: Int, limit: Int?,
              filter: IndexCondition? = nil, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) throws
    {
        guard offset >= 0, (limit ?? 0) >= 0 else {
            throw FeedstoreError.invalidRange(entity: name, index: index ?? "primary key", reason: "negative offset or limit")
        }
        guard let index else {
            // Primary-key order: the values are the records.
            var entity = try entity(name)
            let keys = try KeyRange.resolve(try entity.catalog.primaryKeyRange(range), descending: [false], entity: name, index: "primary key")
            let compiled = try filter.map { try RecordFilter($0, entity: entity) }
            return try walkEntries(keys, in: entity.records, reverse: reverse, startKey: nil, skip: offset, limit: limit,
                                   passes: compiled.map { compiled in { _, value in try self.passes(compiled, value, of: &entity, id: nil) } },
                                   body)
        }
        if let filter, keepsWhatItReads, let found = resolvedQueries.find(entity: name, index: index, range: range, filter: filter) {
            return try walkKeys(of: found, reverse: reverse, offset: offset, limit: limit, body)
        }
        let plain = try resolve(entity: name, index: index, range: range)
        let compiled = try compiledFilter(filter, of: plain)
        if let compiled, let candidates = try textCandidates(of: plain, passing: compiled),
           Self.findsCandidatesFirst(candidates, in: plain, rows: limit.map { $0 > Int.max - offset ? Int.max : offset + $0 })
        {
            return try walkKeys(of: try resolve(entity: name, index: index, range: range, filter: filter), reverse: reverse, offset: offset,
                                limit: limit, body)
        }
        try walkKeys(of: plain, reverse: reverse, offset: offset, limit: limit, filter: compiled, body)
    }

    /// Whether a text query's first `rows` rows (all, for nil) are found through its candidates
    /// (each read once, then sorted) rather than by testing the list's records in order until
    /// that many pass: when the words are rare enough that the walk would test more records than
    /// there are candidates to sort, and the candidates are few enough to gather at once.
    static func findsCandidatesFirst(_ candidates: TextCandidates, in list: ResolvedQuery, rows: Int?) -> Bool {
        guard candidates.entries <= 20_000 else { return false }
        guard let rows else { return true }
        // The walk meets a candidate about every count / entries records.
        let (walked, overflow) = rows.multipliedReportingOverflow(by: list.count)
        return overflow || walked > candidates.entries * candidates.entries / 2
    }

    /// Walks `query`'s rows from `offset`, at most `limit` of them, lending each entry key and
    /// value to `body`: a plain range from the offset's entry, found through the counts; a
    /// filtered query through its order; a range with `filter` (and no order) by testing each
    /// entry's record, skipping `offset` that pass.
    func walkKeys(of query: ResolvedQuery, reverse: Bool, offset: Int, limit: Int?, filter: RecordFilter? = nil,
                  _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) throws
    {
        if limit == 0 || query.keys.isEmpty { return }
        if let order = query.order {
            guard offset < order.count else { return }
            let end = limit.map { Swift.min(order.count, offset + $0) } ?? order.count
            let empty = UnsafeRawBufferPointer(start: nil, count: 0)
            if !reverse {
                var position = offset
                try order.forEachKey(from: offset) { key in
                    try body(key, empty)
                    position += 1
                    return position < end
                }
            } else {
                for position in offset..<end {
                    try order.key(at: order.count - 1 - position)!.withUnsafeBytes { try body($0, empty) }
                }
            }
            return
        }
        if let filter {
            return try walkEntries(query.keys, in: query.index.database, reverse: reverse, startKey: nil, skip: offset, limit: limit,
                                   passes: { key, _ in try self.passes(filter, entryKey: key, of: query) }, body)
        }
        guard offset < query.count || offset == 0 else { return }
        // The offset's entry is found through the counts, and the walk starts there.
        let startKey = offset > 0 ? try query.entryKey(at: offset, reverse: reverse, in: self) : nil
        try walkEntries(query.keys, in: query.index.database, reverse: reverse, startKey: startKey, skip: 0, limit: limit, passes: nil, body)
    }

    /// Walks the entries of `keys` in `database` in order (from `startKey` when given), lending
    /// those that `passes` admits (all when nil) to `body`, after skipping `skip` of them, until
    /// `limit` were lent.
    private func walkEntries(_ keys: KeyRange, in database: LMDBDatabase, reverse: Bool, startKey: [UInt8]?, skip: Int, limit: Int?,
                             passes: ((UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool)?,
                             _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Void) throws
    {
        if keys.isEmpty || limit == 0 { return }
        try access { txn in
            try txn.withCursor(database) { cursor in
                var found: Bool
                if let startKey {
                    found = try cursor.seek(atOrAfter: startKey)
                } else if reverse {
                    found = try cursor.seek(before: keys.upper)
                } else if let lower = keys.lower {
                    found = try cursor.seek(atOrAfter: lower)
                } else {
                    found = try cursor.first()
                }
                var skipped = 0
                var taken = 0
                while found, keys.contains(cursor.key) {
                    if try passes?(cursor.key, cursor.value) ?? true {
                        if skipped < skip {
                            skipped += 1
                        } else {
                            try body(cursor.key, cursor.value)
                            taken += 1
                            if let limit, taken >= limit { return }
                        }
                    }
                    found = try reverse ? cursor.previous() : cursor.next()
                }
            }
        }
    }
}
