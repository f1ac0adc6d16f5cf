import Foundation

/// A thread of the commit log's own that syncs it while the writer commits the same changes to
/// LMDB (``CommitLogKeeper/commit(_:mutations:)``): done side by side, a group commit waits for
/// the longer of the sync and LMDB's writes of its pages instead of both. (A small commit's
/// record is synced on the writer's thread: see ``CommitLogKeeper/syncAsideBytes``.)
///
/// One sync at a time: ``start()``, then ``wait()`` before the next ``start()``.
final class CommitLogSyncer: @unchecked Sendable {
    private let condition = NSCondition()
    private let sync: () throws -> Void
    private var requested = false, finished = false, stopped = false
    private var failure: (any Error)?

    /// Starts the thread, which runs `sync` each time it is asked to.
    init(name: String, sync: @escaping () throws -> Void) {
        self.sync = sync
        NamedThread.start(name) { [self] in run() }
    }

    /// Asks the thread to sync.
    func start() {
        condition.withLock {
            requested = true
            finished = false
            failure = nil
        }
        // After the lock is let go, so that the thread does not wake only to wait for it.
        condition.signal()
    }

    /// Waits for the sync asked for last, and throws what it threw.
    func wait() throws {
        let failure = condition.withLock {
            while !finished { condition.wait() }
            return self.failure
        }
        if let failure { throw failure }
    }

    /// Ends the thread (after the sync it is running, if any).
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    private func run() {
        condition.lock()
        while true {
            while !requested && !stopped { condition.wait() }
            if stopped { break }
            requested = false
            condition.unlock()
            var failure: (any Error)?
            do { try sync() } catch { failure = error }
            condition.lock()
            self.failure = failure
            finished = true
            condition.unlock()
            condition.signal()
            condition.lock()
        }
        condition.unlock()
    }
}
