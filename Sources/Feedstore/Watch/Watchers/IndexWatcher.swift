/// A live query for very long lists: batches without values (``IndexBatch``, rows grouped into
/// ranges), and rows read on demand from the snapshot of the last batch taken, so the shape the
/// consumer shows and the rows it reads always agree. The initial batch is one range per section,
/// and the watcher holds only its section counts, never the rows, even with a window: memory is
/// O(sections), not O(n).
///
/// ```swift
/// let feed = store.watchIndexes(Query(Message.self, index: "byFolderDate"))
/// for try await batch in feed {
///     tableView.performBatchUpdates { apply(batch) }   // rows fetched in cellForRow:
/// }
/// let row = try feed.object(at: RowPath(section: 0, row: 250_000))
/// ```
public typealias IndexWatcher<E: Entity> = BatchWatcher<IndexBatch, E>

extension Store {
    /// Watches `query` in indexes-only mode: batches of positions, rows read on demand.
    public func watchIndexes<E: Entity>(_ query: Query<E>, options: WatchOptions = WatchOptions()) -> IndexWatcher<E> {
        IndexWatcher(store: self, engine: WatchEngine(query: WatchTarget(query), options: options, indexesOnly: true, feed: core.feed),
                     makeRow: { tx, key, index in try tx.object(E.self, forKey: key, index: index) }) { rows, tx in PositionsReducer().batch(from: rows, in: tx) }
    }
}
