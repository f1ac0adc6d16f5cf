/// A live query named at run time, over records read without the application's types: what
/// `storectl watch` and other generic tools use. Batches carry ids and records as
/// ``FieldValue``s (``DynamicChangeBatch``). An unknown entity or index is reported by the first
/// `poll`.
///
/// ```swift
/// let feed = store.watch(entity: "Message", index: "byFolderDate", range: .prefix(1))
/// while let batch = try feed.next(timeout: 1) { print(batch.inserts.count) }
/// ```
public typealias DynamicWatcher = BatchWatcher<DynamicChangeBatch, [String: FieldValue]>

/// An indexes-only live query named at run time: ``IndexBatch``es, and records read on demand
/// (fields by name) with ``BatchWatcher/object(at:)``.
public typealias DynamicIndexWatcher = BatchWatcher<IndexBatch, [String: FieldValue]>

extension Store {
    /// Watches a range of `index` of the entity named `entity`, without its Swift type: batches
    /// carry ids and records as ``FieldValue``s. With a `filter`, the rows are the range's records
    /// that meet it.
    public func watch(entity: String, index: String, range: IndexRange = .all, reverse: Bool = false,
                      filter: IndexCondition? = nil, options: WatchOptions = WatchOptions()) -> DynamicWatcher
    {
        DynamicWatcher(store: self, engine: untypedEngine(entity, index, range, reverse, filter, options, indexesOnly: false),
                       makeRow: { tx, key, schema in try tx.indexEntry(forKey: key, entity: entity, index: schema).record }) { rows, tx in
            try RecordsReducer(entity: entity).batch(from: rows, in: tx)
        }
    }

    /// Watches a range of `index` of the entity named `entity` in indexes-only mode: batches of
    /// positions grouped into ranges, O(runs) each, with records read on demand.
    public func watchIndexes(entity: String, index: String, range: IndexRange = .all, reverse: Bool = false,
                             filter: IndexCondition? = nil, options: WatchOptions = WatchOptions()) -> DynamicIndexWatcher
    {
        DynamicIndexWatcher(store: self, engine: untypedEngine(entity, index, range, reverse, filter, options, indexesOnly: true),
                            makeRow: { tx, key, schema in try tx.indexEntry(forKey: key, entity: entity, index: schema).record }) { rows, tx in
            PositionsReducer().batch(from: rows, in: tx)
        }
    }

    private func untypedEngine(_ entity: String, _ index: String, _ range: IndexRange, _ reverse: Bool, _ filter: IndexCondition?,
                               _ options: WatchOptions, indexesOnly: Bool) -> WatchEngine
    {
        WatchEngine(query: WatchTarget(entity: entity, index: index, range: range, reverse: reverse, filter: filter), options: options,
                    indexesOnly: indexesOnly, feed: core.feed)
    }
}
