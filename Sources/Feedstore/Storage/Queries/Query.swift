/// An ordered view of one entity: a range of one index, forward or reversed. Positions in a
/// query count from 0 in its order; the counted index answers them in O(log n).
///
/// ```swift
/// let folder = Query(Message.self, index: "byFolderDate", range: .prefix(1))
/// let n = try tx.count(folder)                       // O(log n)
/// let row = try tx.object(at: 500_000, in: folder)   // O(log n)
/// let i = try tx.position(of: 42, in: folder)        // O(log n)
/// ```
///
/// A query may also filter its range by a condition chosen at run time (`filter(_:)`, <doc:Filtering>):
/// positions, counts and windows then count the rows that pass it. A read transaction finds a
/// filtered query's rows by one pass over its range the first time it counts or positions it
/// (a window from the start stops at its last row); a watcher makes that pass once, when it opens,
/// and then keeps the rows that pass per commit.
public struct Query<E: Entity>: Sendable, Hashable {
    /// The index whose order the query follows.
    public var index: String
    /// The part of the index in the query.
    public var range: IndexRange
    /// Whether the query runs in reverse index order.
    public var reverse: Bool
    /// The condition the range's records must meet to be rows of the query; nil for all of them.
    public var filter: IndexCondition?
    /// `E`'s entity name, looked up once.
    let entityName: String
    /// The first key path of a typed filter that reads no stored field, refused when the query runs.
    var keyPathProblem: KeyPathFields.Problem?

    /// A query over `range` of `index`, in index order unless `reverse`, of the records that
    /// meet `filter` (all of them when nil).
    public init(_ type: E.Type = E.self, index: String, range: IndexRange = .all, reverse: Bool = false, filter: IndexCondition? = nil) {
        self.entityName = E.entityName
        self.index = index
        self.range = range
        self.reverse = reverse
        self.filter = filter
    }

    /// This query's rows that also meet `predicate`: `query.filter(.contains(\.title, "report",
    /// caseInsensitive: true) && \.isRead == false)`. Filters given in turn must all hold.
    /// A key path that reads no stored field is refused when the query runs
    /// (``FeedstoreError/unknownKeyPath(entity:keyPath:usedBy:reason:)``).
    public func filter(_ predicate: IndexPredicate<E>) -> Query {
        var filtered = filter(predicate.condition)
        filtered.keyPathProblem = keyPathProblem ?? predicate.problem
        return filtered
    }

    /// This query's rows that also meet `condition`, given by field names (the dynamic form).
    public func filter(_ condition: IndexCondition) -> Query {
        var filtered = self
        filtered.filter = filter.map { $0 && condition } ?? condition
        return filtered
    }

    /// Refuses a typed filter whose key path reads no stored field.
    @inline(__always)
    func checkKeyPaths() throws {
        if let keyPathProblem { throw keyPathProblem.error(entity: entityName, usedBy: "the filter") }
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

    /// Resolves a query whose rows are the records of its range that meet `filter`: found
    /// earlier in this transaction, or by one pass over the range.
    /// - Complexity: O(log n) when found; else O(r log n) for the range's r entries.
    @inline(__always)
    func resolve(entity name: String, index indexName: String, range: IndexRange, filter: IndexCondition?) throws -> ResolvedQuery {
        guard let filter else { return try resolve(entity: name, index: indexName, range: range) }
        return try resolveFiltered(entity: name, index: indexName, range: range, filter: filter)
    }

    private func resolveFiltered(entity name: String, index indexName: String, range: IndexRange, filter: IndexCondition) throws -> ResolvedQuery {
        let plain = try resolve(entity: name, index: indexName, range: range)
        if keepsWhatItReads, let found = resolvedQueries.find(entity: name, index: indexName, range: range, filter: filter) { return found }
        guard let compiled = try compiledFilter(filter, of: plain) else { return plain }
        let resolved = plain.filtered(by: compiled, order: try filteredOrder(of: plain, passing: compiled))
        if keepsWhatItReads { resolvedQueries.insert(resolved, entity: name, index: indexName, range: range, filter: filter) }
        return resolved
    }

    /// Makes this transaction answer a filtered query through `order` (a watcher's, which holds
    /// the rows that pass in this transaction's snapshot) instead of a pass of its own.
    func adopt(_ order: FilteredOrder, filter: IndexCondition, entity name: String, index indexName: String, range: IndexRange) throws {
        let plain = try resolve(entity: name, index: indexName, range: range)
        guard keepsWhatItReads, let compiled = try compiledFilter(filter, of: plain) else { return }
        resolvedQueries.insert(plain.filtered(by: compiled, order: order), entity: name, index: indexName, range: range, filter: filter)
    }

    /// `filter` made ready for records of `plain`'s entity, without what its index's own
    /// condition already assures; nil when nothing is left to test.
    func compiledFilter(_ filter: IndexCondition?, of plain: ResolvedQuery) throws -> RecordFilter? {
        guard let left = filter?.removing(plain.index.definition.condition) else { return nil }
        return try RecordFilter(left, entity: plain.entity)
    }

    /// The entries of `plain`'s range whose records pass `filter`, found in one pass (over a
    /// text index's word entries when a word test names the candidates: ``textCandidates(of:passing:)``).
    /// - Complexity: O(r log n) for the range's r entries.
    func filteredOrder(of plain: ResolvedQuery, passing filter: RecordFilter) throws -> FilteredOrder {
        if let candidates = try textCandidates(of: plain, passing: filter) { return try filteredOrder(of: plain, passing: filter, from: candidates) }
        let order = FilteredOrder()
        try walkKeys(of: plain, reverse: false, offset: 0, limit: nil, filter: filter) { key, _ in order.append(key) }
        return order
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
    /// - Complexity: O(log n); a filtered query's first count in a transaction makes a pass
    ///   over its range.
    public func count<E: Entity>(_ query: Query<E>) throws -> Int {
        try query.checkKeyPaths()
        return try resolve(entity: query.entityName, index: query.index, range: query.range, filter: query.filter).count
    }

    /// The record at `position` (from 0, in the query's order), or nil past the end.
    /// - Complexity: O(log n).
    public func object<E: Entity>(at position: Int, in query: Query<E>) throws -> E? {
        try query.checkKeyPaths()
        let resolved = try resolve(entity: query.entityName, index: query.index, range: query.range, filter: query.filter)
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
        try query.checkKeyPaths()
        return try position(entity: query.entityName, index: query.index, range: query.range, reverse: query.reverse, filter: query.filter,
                            of: id.fieldValue)
    }

    /// Records of a query from `offset`, at most `limit` of them.
    /// - Complexity: O(log n + k) for k records returned.
    public func objects<E: Entity>(in query: Query<E>, offset: Int = 0, limit: Int? = nil) throws -> [E] {
        try query.checkKeyPaths()
        return try self.query(E.self, index: query.index, range: query.range, reverse: query.reverse, offset: offset, limit: limit,
                              filter: query.filter)
    }

    /// The entry at a position of a range, read without the application's types.
    /// - Complexity: O(log n).
    public func entry(entity name: String, index indexName: String, range: IndexRange = .all, reverse: Bool = false,
                      filter: IndexCondition? = nil, at position: Int) throws -> IndexEntry?
    {
        let resolved = try resolve(entity: name, index: indexName, range: range, filter: filter)
        guard let key = try resolved.entryKey(at: position, reverse: reverse, in: self) else { return nil }
        return try indexEntry(forKey: key, entity: name, index: resolved.index)
    }

    /// The position of a record in a range, read without the application's types.
    /// - Complexity: O(log n).
    public func position(entity name: String, index indexName: String, range: IndexRange = .all, reverse: Bool = false,
                         filter: IndexCondition? = nil, of id: FieldValue) throws -> Int?
    {
        let resolved = try resolve(entity: name, index: indexName, range: range, filter: filter)
        let id = try resolved.entity.catalog.primaryKeyComponent(id)
        guard let fields = try record(entity: name, id: id),
              let key = try resolved.index.key(of: fields, primaryKey: try KeyEncoding.encode([id]), in: resolved.keys),
              resolved.holds(key: key)
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
