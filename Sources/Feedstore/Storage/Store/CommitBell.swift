import Foundation

/// Rung by the writer after each commit of this process is durable, so that a thread waiting for
/// the next commit (a journal shipper) wakes at once instead of polling. Commits of other
/// processes do not ring it: waiters still look at the journal when their wait times out.
final class CommitBell: @unchecked Sendable {
    private let condition = NSCondition()
    /// The newest commit of this process rung so far.
    private var latest: UInt64 = 0

    func ring(_ sequence: UInt64) {
        condition.withLock {
            if sequence > latest { latest = sequence }
            condition.broadcast()
        }
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
}
