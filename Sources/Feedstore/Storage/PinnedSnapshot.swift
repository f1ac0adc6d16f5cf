import Foundation

/// A read transaction kept open between calls: the snapshot an indexes-only watcher's consumer
/// reads rows from, so `object(at:)` always agrees with the batch it last took.
///
/// LMDB can only grow the map while this process has no open transaction, so growing the map
/// releases every pinned snapshot (their watchers then deliver a reset). Reads take the map lock
/// shared, as every transaction of the store does, so a release never happens mid-read.
final class PinnedSnapshot: @unchecked Sendable {
    private unowned let core: StoreCore
    private let lock = NSLock()
    private var transaction: ReadTransaction?

    init(core: StoreCore, transaction: ReadTransaction) {
        self.core = core
        self.transaction = transaction
    }

    /// Runs `body` in the snapshot; nil when it was released.
    func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R? {
        try core.mapLock.withShared {
            lock.lock()
            defer { lock.unlock() }
            guard let transaction else { return nil }
            return try body(transaction)
        }
    }

    /// Ends the transaction (idempotent).
    func release() {
        lock.lock()
        let ended = transaction
        transaction = nil
        lock.unlock()
        ended?.detach()?.abort()
        core.forgetPinned(self)
    }

    deinit { transaction?.detach()?.abort() }
}

extension StoreCore {
    /// Begins a read transaction that stays open until released (or until the map grows).
    func pinSnapshot() throws -> PinnedSnapshot {
        try mapLock.withShared {
            let snapshot = PinnedSnapshot(core: self, transaction: ReadTransaction(core: self, transaction: try begin(readOnly: true),
                                                                                    schema: schema))
            pinned.withLock { $0[ObjectIdentifier(snapshot)] = WeakSnapshot(snapshot: snapshot) }
            return snapshot
        }
    }

    func forgetPinned(_ snapshot: PinnedSnapshot) {
        pinned.withLock { $0[ObjectIdentifier(snapshot)] = nil }
    }

    /// Releases every pinned snapshot; the caller holds the map lock exclusively.
    func releasePinnedSnapshots() {
        let all = pinned.withLock { table in
            defer { table = [:] }
            return table.values.compactMap(\.snapshot)
        }
        for snapshot in all { snapshot.release() }
    }
}

/// A pinned snapshot known to the store without keeping it alive.
struct WeakSnapshot {
    weak var snapshot: PinnedSnapshot?
}
