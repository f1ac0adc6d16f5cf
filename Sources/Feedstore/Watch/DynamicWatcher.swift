import Foundation

/// A live query named at run time, over records read without the application's types: what
/// `storectl watch` and other generic tools use. Same engine, contract and costs as
/// ``Watcher`` (objects mode: ``DynamicChangeBatch``) and ``IndexWatcher`` (indexes-only mode:
/// ``IndexBatch``). An unknown entity or index is reported by the first `poll`.
///
/// ```swift
/// let feed = store.watch(entity: "Message", index: "byFolderDate", range: .prefix(1))
/// while let batch = try feed.next(timeout: 1) { print(batch.inserts.count) }
/// ```
public final class DynamicWatcher<Batch: Sendable>: AsyncSequence, @unchecked Sendable {
    /// The values the sequence delivers.
    public typealias Element = Batch

    let store: Store
    /// Guarded by `lock`: batches are computed one at a time.
    private let engine: WatchEngine
    private let lock = NSLock()
    private let cancelled = Protected(false)
    private let makeBatch: (RowChanges, ReadTransaction) throws -> Batch

    init(store: Store, target: WatchTarget, options: WatchOptions, makeBatch: @escaping (RowChanges, ReadTransaction) throws -> Batch) {
        self.store = store
        // Objects mode keeps records as fields, exactly as stored.
        engine = WatchEngine(query: target, options: options) { fields, _ in fields }
        self.makeBatch = makeBatch
    }

    /// The journal sequence of the snapshot described by the batches delivered so far (it
    /// advances past commits that change nothing the query shows).
    public var sequence: UInt64 { lock.withLock { engine.sequence } }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { cancelled.current }

    /// The next batch if the store changed what the query shows since the last one (the initial
    /// batch first), without waiting; nil otherwise.
    /// - Complexity: O(k log n) for k changed rows (the initial batch is the whole snapshot in
    ///   objects mode, O(sections · log n) in indexes-only mode).
    public func poll() throws -> Batch? {
        lock.lock()
        defer { lock.unlock() }
        return try store.read { tx in try engine.nextBatch(in: tx).map { try makeBatch($0, tx) } }
    }

    /// Waits up to `timeout` seconds for the next batch, blocking the calling thread; nil on
    /// timeout or cancellation.
    public func next(timeout: TimeInterval) throws -> Batch? { try blockingNext(timeout: timeout) }

    /// Moves a windowed watcher's window; see ``Watcher/setWindow(offset:limit:)``.
    public func setWindow(offset: Int, limit: Int) {
        lock.withLock { engine.requestWindow(offset: offset, limit: limit) }
        store.core.commits.wakeAll()
    }

    /// Stops the watcher: iteration ends and blocked ``next(timeout:)`` calls return nil.
    public func cancel() {
        cancelled.withLock { $0 = true }
        store.core.commits.wakeAll()
    }

    /// Waits for and delivers the next value.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let watcher: DynamicWatcher

        /// Waits for the next batch; nil once the watcher is cancelled or its task is.
        public mutating func next() async throws -> Batch? { try await watcher.asyncNext() }
    }

    /// An iterator over the values.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(watcher: self) }
}

extension DynamicWatcher: PollingLoop {
    var waitSequence: UInt64 { sequence }
}

extension Store {
    /// Watches a range of `index` of the entity named `entity`, without its Swift type: batches
    /// carry ids and records as ``FieldValue``s.
    public func watch(entity: String, index: String, range: IndexRange = .all, reverse: Bool = false,
                      options: WatchOptions = WatchOptions()) -> DynamicWatcher<DynamicChangeBatch>
    {
        var options = options
        options.mode = .objects
        return DynamicWatcher(store: self, target: WatchTarget(entity: entity, index: index, range: range, reverse: reverse),
                              options: options) { rows, tx in try DynamicChangeBatch(rows, entity: entity, in: tx) }
    }

    /// Watches a range of `index` of the entity named `entity` in indexes-only mode: batches of
    /// positions grouped into ranges, O(runs) each, with no records read.
    public func watchIndexes(entity: String, index: String, range: IndexRange = .all, reverse: Bool = false,
                             options: WatchOptions = WatchOptions()) -> DynamicWatcher<IndexBatch>
    {
        var options = options
        options.mode = .indexesOnly
        return DynamicWatcher(store: self, target: WatchTarget(entity: entity, index: index, range: range, reverse: reverse),
                              options: options) { rows, _ in IndexBatch(rows) }
    }
}
