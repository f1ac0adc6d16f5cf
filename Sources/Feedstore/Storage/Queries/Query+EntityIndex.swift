/// Queries on typed indexes (``EntityIndex``): ranges given as Swift values of the components'
/// types, so a value of another type does not compile.
///
/// Bounds read in the list's order: `from` is the first row's end, `to` the last row's, both
/// included. On a descending component the list starts at the largest value, so
/// `Query(Message.unreadByDate, from: newest, to: cutoff)` runs from `newest` back to `cutoff`;
/// with `reverse`, the other way round.
extension Query {
    /// Every record of `index`, in index order unless `reverse`.
    @inlinable
    public init<each K>(_ index: EntityIndex<E, repeat each K>, reverse: Bool = false) {
        self.init(E.self, index: index.name, range: .all, reverse: reverse)
    }

    /// The part of `index` that `range` names: the dynamic form, whose components are checked
    /// when the query runs (``FeedstoreError/invalidRange(entity:index:reason:)``).
    @inlinable
    public init<each K>(_ index: EntityIndex<E, repeat each K>, range: IndexRange, reverse: Bool = false) {
        self.init(E.self, index: index.name, range: range, reverse: reverse)
    }

    /// The records whose first component equals `a`: `Query(Message.byFolderDate, prefix: folder)`.
    @inlinable
    public init<A, each K>(_ index: EntityIndex<E, A, repeat each K>, prefix a: A.KeyValue, reverse: Bool = false) {
        self.init(E.self, index: index.name, range: IndexRange(prefix: [a.fieldValue]), reverse: reverse)
    }

    /// The records whose first two components equal `a` and `b`.
    @inlinable
    public init<A, B, each K>(_ index: EntityIndex<E, A, B, repeat each K>, prefix a: A.KeyValue, _ b: B.KeyValue,
                              reverse: Bool = false)
    {
        self.init(E.self, index: index.name, range: IndexRange(prefix: [a.fieldValue, b.fieldValue]), reverse: reverse)
    }

    /// The records whose first three components equal `a`, `b` and `c`.
    @inlinable
    public init<A, B, C, each K>(_ index: EntityIndex<E, A, B, C, repeat each K>, prefix a: A.KeyValue, _ b: B.KeyValue,
                                 _ c: C.KeyValue, reverse: Bool = false)
    {
        self.init(E.self, index: index.name, range: IndexRange(prefix: [a.fieldValue, b.fieldValue, c.fieldValue]), reverse: reverse)
    }

    /// The records whose first component lies between `from` and `to` (both included), in the
    /// list's order: on a descending component, `from` is the larger value.
    @inlinable
    public init<A, each K>(_ index: EntityIndex<E, A, repeat each K>, from: A.KeyValue?, to: A.KeyValue? = nil, reverse: Bool = false) {
        self.init(E.self, index: index.name, range: Self.range(prefix: [], from: from?.fieldValue, to: to?.fieldValue, reverse: reverse),
                  reverse: reverse)
    }

    /// The records whose first component lies up to `to` (included), in the list's order.
    @inlinable
    public init<A, each K>(_ index: EntityIndex<E, A, repeat each K>, to: A.KeyValue, reverse: Bool = false) {
        self.init(index, from: nil, to: to, reverse: reverse)
    }

    /// The records whose first component equals `a` and whose second lies between `from` and
    /// `to` (both included), in the list's order.
    @inlinable
    public init<A, B, each K>(_ index: EntityIndex<E, A, B, repeat each K>, prefix a: A.KeyValue, from: B.KeyValue?,
                              to: B.KeyValue? = nil, reverse: Bool = false)
    {
        self.init(E.self, index: index.name,
                  range: Self.range(prefix: [a.fieldValue], from: from?.fieldValue, to: to?.fieldValue, reverse: reverse), reverse: reverse)
    }

    /// The records whose first component equals `a` and whose second lies up to `to`
    /// (included), in the list's order.
    @inlinable
    public init<A, B, each K>(_ index: EntityIndex<E, A, B, repeat each K>, prefix a: A.KeyValue, to: B.KeyValue,
                              reverse: Bool = false)
    {
        self.init(index, prefix: a, from: nil, to: to, reverse: reverse)
    }

    /// Bounds given in the list's order, as the range's bounds in index order.
    @usableFromInline
    static func range(prefix: [FieldValue], from: FieldValue?, to: FieldValue?, reverse: Bool) -> IndexRange {
        let (lower, upper) = reverse ? (to, from) : (from, to)
        return IndexRange(prefix: prefix, from: lower.map { .inclusive([$0]) }, to: upper.map { .inclusive([$0]) })
    }
}
