/// An ordered view of one entity: a range of one index, forward or reversed. Positions in a
/// query count from 0 in its order; the counted index answers them in O(log n).
///
/// ```swift
/// let folder = Query(Message.self, index: "byFolderDate", range: .prefix(1))
/// let n = try tx.count(folder)                       // O(log n)
/// let row = try tx.object(at: 500_000, in: folder)   // O(log n)
/// let i = try tx.position(of: 42, in: folder)        // O(log n)
/// ```
public struct Query<E: Entity>: Sendable, Hashable {
    /// The index whose order the query follows.
    public var index: String
    /// The part of the index in the query.
    public var range: IndexRange
    /// Whether the query runs in reverse index order.
    public var reverse: Bool
    /// `E`'s entity name, looked up once.
    let entityName: String

    /// A query over `range` of `index`, in index order unless `reverse`.
    public init(_ type: E.Type = E.self, index: String, range: IndexRange = .all, reverse: Bool = false) {
        self.entityName = E.entityName
        self.index = index
        self.range = range
        self.reverse = reverse
    }

    /// The part of this query whose next leading components equal `values` (a section, when a
    /// query is sectioned by its first components).
    public func narrowed(to values: [FieldValue]) -> Query {
        var narrowed = self
        narrowed.range.prefix += values
        return narrowed
    }
}

extension ReadTransaction {

    /// Resolves a query's range, or finds it resolved earlier in this transaction: a read
    /// transaction's snapshot never changes, so neither does what a query resolves to.
    /// - Complexity: O(log n) the first time, then O(1).
    func resolve(entity name: String, index indexName: String, range: IndexRange) throws -> ResolvedQuery {
        if keepsWhatItReads, let found = resolvedQueries.find(entity: name, index: indexName, range: range) { return found }
        let resolved = try resolveAnew(entity: name, index: indexName, range: range)
        if keepsWhatItReads { resolvedQueries.insert(resolved, entity: name, index: indexName, range: range) }
        return resolved
    }

    private func resolveAnew(entity name: String, index indexName: String, range: IndexRange) throws -> ResolvedQuery {
        let entity = try entity(name)
        let index = try entity.index(named: indexName)
        // Components of another kind convert where nothing is lost, or are refused: a query
        // never answers a component of the wrong kind with an empty result.
        let converted = index.holdsItsKinds(range) ? range : try entity.catalog.keyRange(range, for: index.definition)
        let keys = try KeyRange.resolve(converted, descending: index.definition.components.map(\.descending), entity: name, index: indexName)
        if keys.isEmpty { return ResolvedQuery(entity: entity, index: index, keys: keys, start: 0, count: 0) }
        let (start, end) = try ranks(in: index, from: keys.lower, to: keys.upper)
        return ResolvedQuery(entity: entity, index: index, keys: keys, start: start, count: max(0, end - start))
    }

    /// How many records a query holds.
    /// - Complexity: O(log n).
    public func count<E: Entity>(_ query: Query<E>) throws -> Int {
        try resolve(entity: query.entityName, index: query.index, range: query.range).count
    }

    /// The record at `position` (from 0, in the query's order), or nil past the end.
    /// - Complexity: O(log n).
    public func object<E: Entity>(at position: Int, in query: Query<E>) throws -> E? {
        let resolved = try resolve(entity: query.entityName, index: query.index, range: query.range)
        var entity = resolved.entity
        // The object is decoded into a slot of its own type: an optional captured by the closure
        // would be boxed, which looks up `Optional<E>`'s generic type on every call.
        let slot = UnsafeMutablePointer<E>.allocate(capacity: 1)
        defer { slot.deallocate() }
        let found = try resolved.withEntryKey(at: position, reverse: query.reverse, in: self) { key in
            slot.initialize(to: try row(forKey: key, components: resolved.index.definition.components.count,
                                        entity: &entity, index: query.index) { try decodeEntity(E.self, $0, of: &$1) })
        }
        guard found else { return nil }
        return slot.move()
    }

    /// The record an index entry key names, as `E`.
    func object<E: Entity>(_ type: E.Type, forKey key: [UInt8], index: IndexSchema) throws -> E {
        try row(forKey: key, entity: E.entityName, index: index) { try decodeEntity(E.self, $0, of: &$1) }
    }

    /// The position (from 0, in the query's order) of the record with `id`, or nil when the
    /// record does not exist or is not in the query.
    /// - Complexity: O(log n).
    public func position<E: Entity>(of id: E.ID, in query: Query<E>) throws -> Int? {
        try position(entity: query.entityName, index: query.index, range: query.range, reverse: query.reverse, of: id.fieldValue)
    }

    /// Records of a query from `offset`, at most `limit` of them.
    /// - Complexity: O(log n + k) for k records returned.
    public func objects<E: Entity>(in query: Query<E>, offset: Int = 0, limit: Int? = nil) throws -> [E] {
        try self.query(E.self, index: query.index, range: query.range, reverse: query.reverse, offset: offset, limit: limit)
    }

    /// The entry at a position of a range, read without the application's types.
    /// - Complexity: O(log n).
    public func entry(entity name: String, index indexName: String, range: IndexRange = .all, reverse: Bool = false,
                      at position: Int) throws -> IndexEntry?
    {
        let resolved = try resolve(entity: name, index: indexName, range: range)
        guard let key = try resolved.entryKey(at: position, reverse: reverse, in: self) else { return nil }
        return try indexEntry(forKey: key, entity: name, index: resolved.index)
    }

    /// The position of a record in a range, read without the application's types.
    /// - Complexity: O(log n).
    public func position(entity name: String, index indexName: String, range: IndexRange = .all, reverse: Bool = false,
                         of id: FieldValue) throws -> Int?
    {
        let resolved = try resolve(entity: name, index: indexName, range: range)
        let id = try resolved.entity.catalog.primaryKeyComponent(id)
        guard let fields = try record(entity: name, id: id),
              let key = try resolved.index.key(of: fields, primaryKey: try KeyEncoding.encode([id])),
              key.withUnsafeBytes({ resolved.keys.contains($0) })
        else { return nil }
        return try resolved.position(ofKey: key, reverse: reverse, in: self)
    }

    /// The entry key (components, then primary key) at position `rank` of an index, without
    /// reading the record; nil past the end.
    /// - Complexity: O(log n).
    public func indexKey(entity name: String, index indexName: String, at rank: Int) throws -> IndexKey? {
        let index = try entity(name).index(named: indexName)
        return try accessCounts(of: index) { try $0.entry(at: rank, in: $1) }.map(IndexKey.init)
    }

    /// How many entries of an index sort before `key`.
    /// - Complexity: O(log n).
    public func rank(entity name: String, index indexName: String, of key: IndexKey) throws -> Int {
        let index = try entity(name).index(named: indexName)
        return try accessCounts(of: index) { try $0.rank(of: key.bytes, in: $1) }
    }

    /// How many entries of an index sort before `key` (components, possibly only the leading ones).
    /// - Complexity: O(log n).
    public func rank(entity name: String, index indexName: String, before key: [FieldValue]) throws -> Int {
        let entity = try entity(name)
        let index = try entity.index(named: indexName)
        let bytes = try index.encodePrefix(try entity.catalog.keyComponents(key, for: index.definition, startingAt: 0))
        return try accessCounts(of: index) { try $0.rank(of: bytes, in: $1) }
    }

    /// The number of levels of an index's counts (for tools and benchmarks).
    public func indexHeight(entity name: String, index indexName: String) throws -> Int {
        let index = try entity(name).index(named: indexName)
        return try accessCounts(of: index) { try $0.height(in: $1) }
    }

    func indexEntry(forKey key: [UInt8], entity name: String, index: IndexSchema) throws -> IndexEntry {
        try row(forKey: key, entity: name, index: index) { try indexEntry($0, of: &$1) }
    }

    /// The row of the record an index entry key names, made as ``rows(entity:index:range:reverse:offset:limit:_:)`` makes rows.
    func row<Row>(forKey key: [UInt8], entity name: String, index: IndexSchema,
                  _ make: (_ entry: ScannedEntry, _ entity: inout EntitySchema) throws -> Row) throws -> Row
    {
        var entity = try entity(name)
        return try key.withUnsafeBytes { key in
            try row(forKey: key, components: index.definition.components.count, entity: &entity, index: index.definition.name, make)
        }
    }
}
