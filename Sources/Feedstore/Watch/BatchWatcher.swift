import Foundation

/// A live query: an `AsyncSequence` of change batches. Its cycle is journal → positions →
/// batch → deliver. The first batch is the whole snapshot. Each later one takes the consumer from
/// the snapshot it holds to the store's current state, computed from the journal when the consumer
/// asks. So a slow consumer gets one batch spanning every commit it missed, never part of one, and
/// memory stays bounded. Commits from other handles and other processes are delivered like local
/// ones.
///
/// One class serves every kind of batch: ``Watcher`` (typed ``ChangeBatch``es), ``DynamicWatcher``
/// (``DynamicChangeBatch``es, for queries named at run time) and indexes-only batches
/// (``IndexBatch``) of a query named at run time.
///
/// ```swift
/// let inbox = store.watch(Query(Message.self, index: "byFolderDate", range: .prefix(1)))
/// for try await batch in inbox { mirror.apply(batch) }
/// ```
public final class BatchWatcher<Batch: Sendable>: AsyncSequence, @unchecked Sendable {
    /// The values the sequence delivers.
    public typealias Element = Batch

    let store: Store
    /// Guarded by `lock`: batches are computed one at a time.
    private let engine: WatchEngine
    private let lock = NSLock()
    private let cancelled = Protected(false)
    /// Turns the engine's rows into the batch this watcher delivers (adding values, or ranges).
    private let makeBatch: (RowChanges, ReadTransaction) throws -> Batch

    init(store: Store, engine: WatchEngine, makeBatch: @escaping (RowChanges, ReadTransaction) throws -> Batch) {
        self.store = store
        self.engine = engine
        self.makeBatch = makeBatch
    }

    deinit { engine.stop() }

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
        if isCancelled { return nil }
        return try store.readRetrying { tx -> Batch?? in
            switch try engine.nextBatch(in: tx) {
            case let .batch(rows): return .some(try makeBatch(rows, tx))
            case .unchanged: return .some(nil)
            case .retry: return nil
            }
        }
    }

    /// Waits up to `timeout` seconds for the next batch, blocking the calling thread; nil on
    /// timeout or cancellation. For consumers that run on their own threads (command-line tools,
    /// or code that must not depend on Swift concurrency's shared threads).
    public func next(timeout: TimeInterval) throws -> Batch? { try blockingNext(timeout: timeout) }

    /// Moves a windowed watcher's window (paging): the next batch takes the consumer from the
    /// old window to the new one. Has no effect on a watcher opened without a window.
    /// - Complexity: the next batch costs O(log n + r) for r rows entering or leaving the window.
    public func setWindow(offset: Int, limit: Int) {
        lock.withLock {
            engine.requestWindow(offset: offset, limit: limit)
            engine.signal()
        }
    }

    /// Stops the watcher: iteration ends and blocked ``next(timeout:)`` calls return nil.
    public func cancel() {
        cancelled.withLock { $0 = true }
        lock.withLock { engine.stop() }
    }

    /// Waits for and delivers the next value.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let watcher: BatchWatcher

        /// Waits for the next batch; nil once the watcher is cancelled or its task is.
        public mutating func next() async throws -> Batch? { try await watcher.asyncNext() }
    }

    /// An iterator over the values.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(watcher: self) }
}

extension BatchWatcher: PollingLoop {
    var waitSubscription: FeedSubscription? { lock.withLock { engine.feedSubscription } }
}
