import Foundation

/// A live query for very long lists: batches without values (``IndexBatch``, rows grouped into
/// ranges), and rows read on demand from the snapshot of the last batch taken, so the shape the
/// consumer shows and the rows it reads always agree. The initial batch is one range per section,
/// and the watcher holds only its section counts (or window), never the rows: memory is
/// O(sections + window), not O(n).
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
        var options = options
        options.mode = .indexesOnly
        engine = WatchEngine.typed(query, options: options)
    }

    deinit { snapshot?.release() }

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
        let pin = try store.core.pinSnapshot()
        guard let rows = try pin.read({ tx in try engine.nextBatch(in: tx) }), let changes = rows else {
            pin.release()
            return nil
        }
        snapshot?.release()
        snapshot = pin
        return IndexBatch(changes)
    }

    /// Waits up to `timeout` seconds for the next batch, blocking the calling thread.
    public func next(timeout: TimeInterval) throws -> IndexBatch? { try blockingNext(timeout: timeout) }

    /// Sections in the snapshot of the last batch taken.
    public var numberOfSections: Int {
        lock.lock()
        defer { lock.unlock() }
        return sectionCounts().count
    }

    /// Rows of `section` in the snapshot of the last batch taken.
    public func numberOfObjects(inSection section: Int) -> Int {
        lock.lock()
        defer { lock.unlock() }
        let counts = sectionCounts()
        return counts.indices.contains(section) ? counts[section] : 0
    }

    /// The row at `path` in the snapshot of the last batch taken; nil outside it.
    /// - Complexity: O(log n).
    public func object(at path: RowPath) throws -> E? {
        lock.lock()
        defer { lock.unlock() }
        let counts = sectionCounts()
        guard counts.indices.contains(path.section), path.row >= 0, path.row < counts[path.section] else { return nil }
        let flat = counts[..<path.section].reduce(0, +) + path.row
        let read: (ReadTransaction) throws -> E? = { [engine] tx in
            if let rows = engine.windowRows {
                return try tx.get(E.self, id: try Self.id(rows[flat].id))
            }
            let resolved = try tx.resolve(entity: engine.query.entity, index: engine.query.index, range: engine.query.range)
            let rank = engine.query.reverse ? resolved.start + resolved.count - 1 - flat : resolved.start + flat
            guard let key = try tx.accessCounts(of: resolved.index, { try resolved.index.counted.entry(at: rank, in: $0) }) else { return nil }
            let entry = try tx.indexEntry(forKey: key, entity: E.entityName, index: resolved.index)
            return try ReadTransaction.decode(E.self, from: entry.record, id: entry.id)
        }
        if let snapshot, let value = try snapshot.read(read) { return value }
        // The snapshot was released (the map grew): read the current state, and make the next
        // batch a reset so the consumer's shape catches up.
        engine.resetPending = true
        return try store.read(read)
    }

    private static func id(_ value: FieldValue) throws -> E.ID {
        guard let id = E.ID(fieldValue: value) else {
            throw FeedstoreError.decodingFailed(entity: E.entityName, id: value, reason: "the id is not a \(E.ID.self)")
        }
        return id
    }

    /// Row counts per section of the current snapshot (caller holds the lock).
    private func sectionCounts() -> [Int] {
        if let rows = engine.windowRows {
            let paths = engine.windowSections(rows).paths
            var counts: [Int] = []
            for path in paths {
                if path.section == counts.count { counts.append(0) }
                counts[path.section] += 1
            }
            return counts.isEmpty && engine.options.sectionBy == 0 ? [0] : counts
        }
        return engine.currentSections?.sections.map(\.count) ?? []
    }

    /// Moves a windowed watcher's window; see ``Watcher/setWindow(offset:limit:)``.
    public func setWindow(offset: Int, limit: Int) {
        lock.withLock { engine.requestWindow(offset: offset, limit: limit) }
        store.core.commits.wakeAll()
    }

    /// Stops the watcher: iteration ends and the snapshot is released.
    public func cancel() {
        cancelled.withLock { $0 = true }
        lock.lock()
        snapshot?.release()
        snapshot = nil
        lock.unlock()
        store.core.commits.wakeAll()
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
    var waitSequence: UInt64 { sequence }
}

extension Store {
    /// Watches `query` in indexes-only mode: batches of positions, rows read on demand.
    public func watchIndexes<E: Entity>(_ query: Query<E>, options: WatchOptions = WatchOptions()) -> IndexWatcher<E> {
        IndexWatcher(store: self, query: query, options: options)
    }
}
