import Foundation

/// A live query: an `AsyncSequence` of ``ChangeBatch``es. Its cycle is journal → positions →
/// batch → deliver. The first batch is the whole snapshot. Each later one takes the consumer from
/// the snapshot it holds to the store's current state, computed from the journal when the consumer
/// asks. So a slow consumer gets one batch spanning every commit it missed, never part of one, and
/// memory stays bounded. Commits from other handles and other processes are delivered like local
/// ones.
///
/// ```swift
/// let inbox = store.watch(Query(Message.self, index: "byFolderDate", range: .prefix(1)))
/// for try await batch in inbox { mirror.apply(batch) }
/// ```
public final class Watcher<E: Entity>: AsyncSequence, @unchecked Sendable {
    /// The values the sequence delivers.
    public typealias Element = ChangeBatch<E>

    let store: Store
    /// Guarded by `lock`: batches are computed one at a time.
    private let engine: WatchEngine
    private let lock = NSLock()
    private let cancelled = Protected(false)

    init(store: Store, query: Query<E>, options: WatchOptions) {
        self.store = store
        self.engine = WatchEngine.typed(query, options: options)
    }

    /// The journal sequence of the snapshot described by the batches delivered so far.
    public var sequence: UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return engine.sequence
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { cancelled.current }

    /// The next batch if the store changed what the query shows since the last one (the initial
    /// batch first), without waiting; nil otherwise.
    /// - Complexity: O(k log n) for k changed rows (the initial batch is the whole snapshot).
    public func poll() throws -> ChangeBatch<E>? {
        lock.lock()
        defer { lock.unlock() }
        return try store.read { tx in
            try engine.nextBatch(in: tx).map { try ChangeBatch($0, in: tx) }
        }
    }

    /// Waits up to `timeout` seconds for the next batch, blocking the calling thread; nil on
    /// timeout or cancellation. For consumers that run on their own threads (command-line tools,
    /// or code that must not depend on Swift concurrency's shared threads).
    public func next(timeout: TimeInterval) throws -> ChangeBatch<E>? { try blockingNext(timeout: timeout) }

    /// Moves a windowed watcher's window (paging): the next batch takes the consumer from the
    /// old window to the new one. Has no effect on a watcher opened without a window.
    /// - Complexity: the next batch costs O(log n + w) for a window of w rows.
    public func setWindow(offset: Int, limit: Int) {
        lock.withLock { engine.requestWindow(offset: offset, limit: limit) }
        store.core.commits.wakeAll()
    }

    /// Stops the watcher: iteration ends.
    public func cancel() {
        cancelled.withLock { $0 = true }
        store.core.commits.wakeAll()
    }

    /// Waits for and delivers the next value.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let watcher: Watcher

        /// Waits for the next batch; nil once the watcher is cancelled or its task is.
        public mutating func next() async throws -> ChangeBatch<E>? { try await watcher.asyncNext() }
    }

    /// An iterator over the values.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(watcher: self) }
}

extension Watcher: PollingLoop {
    var waitSequence: UInt64 { sequence }
}

/// Keeps a callback watcher alive; cancel it (or let it go) to stop deliveries.
public final class WatchSubscription: Sendable {
    private let task: Task<Void, Never>
    private let stop: @Sendable () -> Void

    init(task: Task<Void, Never>, stop: @escaping @Sendable () -> Void) {
        self.task = task
        self.stop = stop
    }

    /// Stops deliveries; a callback already running finishes.
    public func cancel() {
        stop()
        task.cancel()
    }

    deinit { cancel() }
}

extension Store {
    /// Watches `query`: the returned sequence delivers the initial snapshot, then one batch per
    /// change the query shows (coalesced when the consumer is slower than the writers).
    public func watch<E: Entity>(_ query: Query<E>, options: WatchOptions = WatchOptions()) -> Watcher<E> {
        Watcher(store: self, query: query, options: options)
    }

    /// Watches `query`, calling `handler` on `queue` with each batch. The next batch is computed
    /// after the handler returns, so a slow handler receives coalesced batches. Errors (the store
    /// closing, damaged data) go to `onError`, after which deliveries stop.
    public func watch<E: Entity>(_ query: Query<E>, options: WatchOptions = WatchOptions(), queue: DispatchQueue,
                                 onError: (@Sendable (any Error) -> Void)? = nil,
                                 _ handler: @escaping @Sendable (ChangeBatch<E>) -> Void) -> WatchSubscription
    {
        let watcher = watch(query, options: options)
        let task = Task {
            do {
                for try await batch in watcher {
                    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                        queue.async {
                            handler(batch)
                            done.resume()
                        }
                    }
                }
            } catch {
                queue.async { onError?(error) }
            }
        }
        return WatchSubscription(task: task, stop: { watcher.cancel() })
    }
}
