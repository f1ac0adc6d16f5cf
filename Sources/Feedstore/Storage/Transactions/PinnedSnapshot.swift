import Foundation

/// A read transaction kept open between calls: the snapshot an indexes-only watcher's consumer
/// reads rows from, so `object(at:)` always agrees with the batch it last took.
///
/// Watchers that take their batches at the same journal sequence share one snapshot (counted by
/// its users), so thousands of watchers following the head hold one reader slot, not one each.
/// LMDB's reader table has room for ``StoreCore/maximumReaders`` snapshots at once.
///
/// LMDB can only grow the map while this process has no open transaction, so growing the map
/// releases every pinned snapshot (their watchers then deliver a reset). Reads take the map lock
/// shared, as every transaction of the store does, so a release never happens mid-read.
final class PinnedSnapshot: @unchecked Sendable {
    private unowned let core: StoreCore
    /// The journal sequence and catalog version the snapshot shows: what makes two snapshots
    /// interchangeable.
    let head: UInt64
    let catalogVersion: UInt64
    private let lock = NSLock()
    private var transaction: ReadTransaction?
    /// Watchers holding the snapshot; guarded by the store's table of pinned snapshots.
    fileprivate var users = 1

    fileprivate init(core: StoreCore, transaction: ReadTransaction, head: UInt64, catalogVersion: UInt64) {
        self.core = core
        self.transaction = transaction
        self.head = head
        self.catalogVersion = catalogVersion
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

    /// Gives up this user's hold; the transaction ends with the last one.
    func release() {
        let last = core.pinned.withLock { table -> Bool in
            users -= 1
            guard users == 0 else { return false }
            table[ObjectIdentifier(self)] = nil
            return true
        }
        if last { end() }
    }

    /// Ends the transaction whoever still holds it (idempotent).
    fileprivate func end() {
        lock.lock()
        let ended = transaction
        transaction = nil
        lock.unlock()
        ended?.detach()?.abort()
    }

    fileprivate var isEnded: Bool { lock.withLock { transaction == nil } }

    deinit { transaction?.detach()?.abort() }
}

extension StoreCore {
    /// LMDB's reader slots (every open read transaction of every process holds one).
    static let maximumReaders: UInt32 = 254

    /// A read transaction that stays open until released (or until the map grows): a new one,
    /// or a pinned one showing the same state.
    func pinSnapshot() throws -> PinnedSnapshot {
        try mapLock.withShared {
            let transaction = ReadTransaction(core: self, transaction: try begin(readOnly: true), schema: schema)
            let head = try transaction.access { try system.newestSequence(in: $0) }
            let version = try transaction.access { try storedCatalogVersion(in: $0) }
            let shared = pinned.withLock { table -> PinnedSnapshot? in
                guard let found = table.values.lazy.compactMap(\.snapshot).first(where: {
                    $0.head == head && $0.catalogVersion == version && $0.users > 0 && !$0.isEnded
                }) else { return nil }
                found.users += 1
                return found
            }
            if let shared {
                transaction.detach()?.abort()
                return shared
            }
            let snapshot = PinnedSnapshot(core: self, transaction: transaction, head: head, catalogVersion: version)
            pinned.withLock { $0[ObjectIdentifier(snapshot)] = WeakSnapshot(snapshot: snapshot) }
            return snapshot
        }
    }

    /// Ends every pinned snapshot; the caller holds the map lock exclusively.
    func releasePinnedSnapshots() {
        let all = pinned.withLock { table in
            defer { table = [:] }
            return table.values.compactMap(\.snapshot)
        }
        for snapshot in all { snapshot.end() }
    }
}

/// A pinned snapshot known to the store without keeping it alive.
struct WeakSnapshot {
    weak var snapshot: PinnedSnapshot?
}
