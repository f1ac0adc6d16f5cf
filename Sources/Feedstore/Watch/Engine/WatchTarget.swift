/// What a watcher watches, by name: a range of one entity's index, in one direction, and the
/// filter its records must meet. Typed watchers make it from a ``Query``; untyped ones from
/// names given at run time.
struct WatchTarget: Sendable, Hashable {
    var entity: String
    var index: String
    var range: IndexRange
    var reverse: Bool
    var filter: IndexCondition?
    /// A typed filter's key path that reads no stored field: the first batch throws it.
    var keyPathProblem: KeyPathFields.Problem?

    init(entity: String, index: String, range: IndexRange, reverse: Bool, filter: IndexCondition? = nil) {
        self.entity = entity
        self.index = index
        self.range = range
        self.reverse = reverse
        self.filter = filter
    }

    init<E: Entity>(_ query: Query<E>) {
        self.init(entity: E.entityName, index: query.index, range: query.range, reverse: query.reverse, filter: query.filter)
        keyPathProblem = query.keyPathProblem
    }
}
