/// What a watcher watches, by name: a range of one entity's index, in one direction. Typed
/// watchers make it from a ``Query``; untyped ones from names given at run time.
struct WatchTarget: Sendable, Hashable {
    var entity: String
    var index: String
    var range: IndexRange
    var reverse: Bool

    init(entity: String, index: String, range: IndexRange, reverse: Bool) {
        self.entity = entity
        self.index = index
        self.range = range
        self.reverse = reverse
    }

    init<E: Entity>(_ query: Query<E>) {
        self.init(entity: E.entityName, index: query.index, range: query.range, reverse: query.reverse)
    }
}
