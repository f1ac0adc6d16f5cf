import Foundation

/// Rung by the writer after each commit of this process is durable, so that a thread waiting for
/// the next commit (a journal shipper) wakes at once instead of polling, and listeners run on the
/// writer's thread. Other processes' commits wake its waiters too, once one has waited: the
/// store's commit signal reports them (``StoreCore/listenForOtherCommits()``).
final class CommitBell: @unchecked Sendable {
    private let condition = NSCondition()
    /// The newest commit rung or noted so far.
    private var latest: UInt64 = 0
    /// Called on the committing thread at each ring, by number.
    private var listeners: [(number: Int, body: @Sendable (UInt64) -> Void)] = []
    private var listenersMade = 0

    func ring(_ sequence: UInt64) {
        let listeners = condition.withLock {
            if sequence > latest { latest = sequence }
            condition.broadcast()
            return self.listeners
        }
        for listener in listeners { listener.body(sequence) }
    }

    /// Notes that the journal's head is `sequence`, read after another process may have
    /// committed: wakes the waiters, not the listeners (which hear of this process's commits).
    func note(_ sequence: UInt64) {
        condition.withLock {
            guard sequence > latest else { return }
            latest = sequence
            condition.broadcast()
        }
    }

    /// Calls `body` with the newest sequence after each commit of this process, on the thread
    /// that made it; returns the number that ``stopListening(_:)`` takes.
    func listen(_ body: @escaping @Sendable (UInt64) -> Void) -> Int {
        condition.withLock {
            listenersMade += 1
            listeners.append((listenersMade, body))
            return listenersMade
        }
    }

    func stopListening(_ number: Int) {
        condition.withLock { listeners.removeAll { $0.number == number } }
    }

    /// Waits until a commit past `sequence` was rung or noted, or `timeout` passed; whether one was.
    func wait(after sequence: UInt64, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        return condition.withLock {
            while latest <= sequence {
                if !condition.wait(until: deadline) { return latest > sequence }
            }
            return true
        }
    }
}

extension Store {
    /// Waits until a commit after `sequence` is durable, made in this process or another, or
    /// `timeout` passed; whether one was. From the first call on, the process listens to the
    /// store's commit signal, so that another process's commit ends the wait with no timer.
    @_spi(Replication) public func waitForCommit(after sequence: UInt64, timeout: TimeInterval) -> Bool {
        core.listenForOtherCommits()
        return core.commitBell.wait(after: sequence, timeout: timeout)
    }

    /// Calls `body` after each commit this process makes to the store once it is durable, on the
    /// thread that made it (keep it short: the next commit waits for it), with the newest
    /// sequence; returns the number ``stopListening(_:)`` takes. A thread that waits for
    /// commits then needs no wake-up of its own for each.
    @_spi(Replication) public func whenCommitted(_ body: @escaping @Sendable (UInt64) -> Void) -> Int {
        core.commitBell.listen(body)
    }

    /// Ends the calls of ``whenCommitted(_:)`` numbered `listener`.
    @_spi(Replication) public func stopListening(_ listener: Int) {
        core.commitBell.stopListening(listener)
    }
}
