import Foundation

/// A live query over a typed ``Query``: batches carry the entity's values (``ChangeBatch``).
///
/// ```swift
/// let inbox = store.watch(Query(Message.self, index: "byFolderDate", range: .prefix(1)))
/// for try await batch in inbox { mirror.apply(batch) }
/// ```
public typealias Watcher<E: Entity> = BatchWatcher<ChangeBatch<E>, E>

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
        Watcher(store: self, engine: WatchEngine(query: WatchTarget(query), options: options, indexesOnly: false, feed: core.feed),
                makeRow: { tx, key, index in try tx.object(E.self, forKey: key, index: index) }) { rows, tx in try ValuesReducer<E>().batch(from: rows, in: tx) }
    }

    /// Watches `query`, calling `handler` on `queue` with each batch; see
    /// ``BatchWatcher/deliver(on:onError:_:)``.
    public func watch<E: Entity>(_ query: Query<E>, options: WatchOptions = WatchOptions(), queue: DispatchQueue,
                                 onError: (@Sendable (any Error) -> Void)? = nil,
                                 _ handler: @escaping @Sendable (ChangeBatch<E>) -> Void) -> WatchSubscription
    {
        watch(query, options: options).deliver(on: queue, onError: onError, handler)
    }
}
