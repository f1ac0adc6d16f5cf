import Foundation

/// One change to an observed record.
public enum RecordChange<E: Entity>: Sendable {
    /// The record as it is when observation starts (nil when it does not exist).
    case initial(E?)
    /// The record was created, or created again after a delete.
    case inserted(E)
    /// The record changed; the fields that did.
    case updated(E, fields: [String])
    /// The record was deleted.
    case deleted
}

/// Observes one record by id: an `AsyncSequence` delivering its current value, then each change.
/// Changes spanning several commits are coalesced (the value is always the latest).
public final class RecordObserver<E: Entity>: AsyncSequence, @unchecked Sendable {
    /// The values the sequence delivers.
    public typealias Element = RecordChange<E>

    let store: Store
    /// The id of the observed record.
    public let id: E.ID
    private let lock = NSLock()
    private var sequence: UInt64?
    private var exists = false
    private var subscription: FeedSubscription?
    private let cancelled = Protected(false)

    init(store: Store, id: E.ID) {
        self.store = store
        self.id = id
    }

    deinit {
        if let subscription { store.core.feed.remove(subscription) }
    }

    /// The next change if there is one, without waiting (the initial value first).
    /// - Complexity: O(log n); the store's change feed routes this record's journal entries to
    ///   the observer, and no others.
    public func poll() throws -> RecordChange<E>? {
        lock.lock()
        defer { lock.unlock() }
        if isCancelled { return nil }
        return try store.readRetrying { tx -> RecordChange<E>?? in
            let head = try tx.newestSequence()
            let entity = try tx.entity(E.entityName)
            let target = FeedSubscription.Target.record(entity: entity.catalog.id, primaryKey: try KeyEncoding.encode([id.fieldValue]))
            let subscription = self.subscription ?? store.core.feed.subscription(target)
            self.subscription = subscription
            guard let folded = try store.core.feed.synchronize(subscription, through: head, in: tx) else { return nil }
            guard sequence != nil else {
                let value = try tx.get(E.self, id: id)
                sequence = head
                exists = value != nil
                return .some(.initial(value))
            }
            sequence = head
            // Nothing was routed to this record since the last change delivered.
            guard !folded.isEmpty else { return .some(nil) }
            let value = try tx.get(E.self, id: id)
            let existed = exists
            exists = value != nil
            // Past the feed's limits (another process's commits trimmed before this process read
            // them), what changed is unknown: the current state is reported, with no fields.
            let fields = folded.records.values.flatMap { $0.fieldIDs.map { entity.fieldTable.name(id: $0) ?? "#\($0)" } }
            switch (existed, value) {
            case (_, nil): return .some(existed ? .deleted : nil)
            case let (false, value?): return .some(.inserted(value))
            case let (true, value?): return .some(.updated(value, fields: Set(fields).sorted()))
            }
        }
    }

    /// Stops the observer: iteration ends.
    public func cancel() {
        cancelled.withLock { $0 = true }
        lock.withLock { subscription.map(store.core.feed.remove) }
    }

    /// Waits for and delivers the next value.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let observer: RecordObserver

        /// Waits for the next change; nil once cancelled.
        public mutating func next() async throws -> RecordChange<E>? { try await observer.asyncNext() }
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { cancelled.current }

    /// Waits up to `timeout` seconds for the next change, blocking the calling thread.
    public func next(timeout: TimeInterval) throws -> RecordChange<E>? { try blockingNext(timeout: timeout) }

    /// An iterator over the values.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(observer: self) }
}

extension RecordObserver: PollingLoop {
    var waitSubscription: FeedSubscription? { lock.withLock { subscription } }
}

extension Store {
    /// Observes the record with `id`: its current value, then every change to it.
    public func observe<E: Entity>(_ type: E.Type, id: E.ID) -> RecordObserver<E> {
        RecordObserver(store: self, id: id)
    }
}
