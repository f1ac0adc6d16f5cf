import Foundation

/// Rung by the writer after each commit of this process is durable, so that a thread waiting for
/// the next commit (a journal shipper) wakes at once instead of polling, and listeners run on the
/// writer's thread. Commits of other processes do not ring it: waiters still look at the journal
/// when their wait times out.
final class CommitBell: @unchecked Sendable {
    private let condition = NSCondition()
    /// The newest commit of this process rung so far.
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

    /// Waits until this process has committed past `sequence`, or `timeout` passed; whether it did.
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
    /// Waits until a commit made in this process after `sequence` is durable, or `timeout`
    /// passed; whether one was. Commits of other processes are not seen here: a caller that
    /// times out reads the journal's head itself.
    @_spi(Replication) public func waitForCommit(after sequence: UInt64, timeout: TimeInterval) -> Bool {
        core.commitBell.wait(after: sequence, timeout: timeout)
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
