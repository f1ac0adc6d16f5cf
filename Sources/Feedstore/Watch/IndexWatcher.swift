import Foundation

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
public final class IndexWatcher<E: Entity>: AsyncSequence, @unchecked Sendable {
    /// The values the sequence delivers.
    public typealias Element = IndexBatch

    let store: Store
    private let engine: WatchEngine
    private let lock = NSLock()
    private var snapshot: PinnedSnapshot?
    private let cancelled = Protected(false)

    init(store: Store, query: Query<E>, options: WatchOptions) {
        self.store = store
        engine = WatchEngine(query: WatchTarget(query), options: options, indexesOnly: true, feed: store.core.feed)
    }

    deinit {
        snapshot?.release()
        engine.stop()
    }

    /// The journal sequence of the snapshot described by the batches taken so far.
    public var sequence: UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return engine.sequence
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { cancelled.current }

    /// The next batch if the query's shape changed since the last one (the initial batch
    /// first), without waiting; nil otherwise. Taking a batch moves ``object(at:)`` to its snapshot.
    /// - Complexity: O(k log n) for k changed rows; the initial batch is O(sections · log n).
    public func poll() throws -> IndexBatch? {
        lock.lock()
        defer { lock.unlock() }
        if isCancelled { return nil }
        while true {
            let pin = try store.core.pinSnapshot()
            let step = try pin.read { tx in try engine.nextBatch(in: tx) }
            guard case let .batch(rows)? = step else {
                pin.release()
                if case .retry? = step { continue }
                return nil
            }
            snapshot?.release()
            snapshot = pin
            return IndexBatch(rows)
        }
    }

    /// Waits up to `timeout` seconds for the next batch, blocking the calling thread.
    public func next(timeout: TimeInterval) throws -> IndexBatch? { try blockingNext(timeout: timeout) }

    /// Sections in the snapshot of the last batch taken.
    /// - Complexity: O(1).
    public var numberOfSections: Int { lock.withLock { engine.shown?.count ?? 0 } }

    /// Rows of `section` in the snapshot of the last batch taken.
    /// - Complexity: O(1).
    public func numberOfObjects(inSection section: Int) -> Int {
        lock.withLock {
            guard let shown = engine.shown, shown.sections.indices.contains(section) else { return 0 }
            return shown.sections[section].count
        }
    }

    /// The row at `path` in the snapshot of the last batch taken; nil outside it.
    /// - Complexity: O(log n).
    public func object(at path: RowPath) throws -> E? {
        try lock.withLock {
            try readShown { [engine] tx in
                let resolved = try tx.resolve(entity: engine.query.entity, index: engine.query.index, range: engine.query.range)
                guard let rank = engine.indexRank(of: path, in: resolved),
                      let key = try tx.accessCounts(of: resolved.index, { try resolved.index.counted.entry(at: rank, in: $0) }) else { return nil }
                let entry = try tx.indexEntry(forKey: key, entity: E.entityName, index: resolved.index)
                return try ReadTransaction.decode(E.self, from: entry.record, id: entry.id)
            }
        }
    }

    /// The path of the record with `id` in the snapshot of the last batch taken; nil when the
    /// query does not show it (NSFetchedResultsController's `indexPath(forObject:)`).
    /// - Complexity: O(log n).
    public func path(of id: E.ID) throws -> RowPath? {
        try lock.withLock {
            try readShown { [engine] tx in
                let resolved = try tx.resolve(entity: engine.query.entity, index: engine.query.index, range: engine.query.range)
                guard let fields = try tx.record(entity: E.entityName, id: id.fieldValue),
                      let key = try resolved.index.key(of: fields, primaryKey: try KeyEncoding.encode([id.fieldValue])) else { return nil }
                return try engine.path(ofKey: key, in: tx, resolved)
            }
        }
    }

    /// Reads in the snapshot of the last batch taken (caller holds the lock). When the map grew
    /// and released it, reads the current state and makes the next batch a reset, so the
    /// consumer's shape catches up.
    private func readShown<R>(_ read: (ReadTransaction) throws -> R?) throws -> R? {
        if let snapshot {
            if let value = try snapshot.read(read) { return value }
            engine.resetPending = true
        }
        return try store.read(read)
    }

    /// Moves a windowed watcher's window; see ``Watcher/setWindow(offset:limit:)``.
    public func setWindow(offset: Int, limit: Int) {
        lock.withLock {
            engine.requestWindow(offset: offset, limit: limit)
            engine.signal()
        }
    }

    /// Stops the watcher: iteration ends and the snapshot is released.
    public func cancel() {
        cancelled.withLock { $0 = true }
        lock.withLock {
            snapshot?.release()
            snapshot = nil
            engine.stop()
        }
    }

    /// Waits for and delivers the next value.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let watcher: IndexWatcher

        /// Waits for the next batch; nil once cancelled.
        public mutating func next() async throws -> IndexBatch? { try await watcher.asyncNext() }
    }

    /// An iterator over the values.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(watcher: self) }
}

extension IndexWatcher: PollingLoop {
    var waitSubscription: FeedSubscription? { lock.withLock { engine.feedSubscription } }
}

extension Store {
    /// Watches `query` in indexes-only mode: batches of positions, rows read on demand.
    public func watchIndexes<E: Entity>(_ query: Query<E>, options: WatchOptions = WatchOptions()) -> IndexWatcher<E> {
        IndexWatcher(store: self, query: query, options: options)
    }
}
