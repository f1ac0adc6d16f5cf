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
    private let cancelled = Protected(false)

    init(store: Store, id: E.ID) {
        self.store = store
        self.id = id
    }

    /// The next change if there is one, without waiting (the initial value first).
    /// - Complexity: O(e) for e journal entries since the last change delivered.
    public func poll() throws -> RecordChange<E>? {
        lock.lock()
        defer { lock.unlock() }
        return try store.read { tx in
            let head = try tx.journalBounds().last
            let value = try tx.get(E.self, id: id)
            guard let since = sequence else {
                sequence = head
                exists = value != nil
                return .initial(value)
            }
            guard head > since else { return nil }
            // Fold this record's entries since the last delivery.
            var fields = Set<String>()
            var touched = false
            var position = since
            let target = id.fieldValue
            do {
                while position < head {
                    let commits = try tx.journal(after: position, limit: 256)
                    guard let last = commits.last else { break }
                    for entry in commits.flatMap(\.entries) where entry.entity == E.entityName && entry.id == target {
                        touched = true
                        fields.formUnion(entry.changedFields)
                    }
                    position = last.sequence
                }
            } catch FeedstoreError.journalBehindRetention {
                touched = true  // unknown: report the current state
            }
            sequence = head
            let existed = exists
            exists = value != nil
            guard touched else { return nil }
            switch (existed, value) {
            case (_, nil): return existed ? .deleted : nil
            case let (false, value?): return .inserted(value)
            case let (true, value?): return .updated(value, fields: fields.sorted())
            }
        }
    }

    /// Stops the observer: iteration ends.
    public func cancel() {
        cancelled.withLock { $0 = true }
        store.core.commits.wakeAll()
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
    var waitSequence: UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return sequence ?? 0
    }
}

extension Store {
    /// Observes the record with `id`: its current value, then every change to it.
    public func observe<E: Entity>(_ type: E.Type, id: E.ID) -> RecordObserver<E> {
        RecordObserver(store: self, id: id)
    }
}
