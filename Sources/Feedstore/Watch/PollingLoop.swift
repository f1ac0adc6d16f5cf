import Foundation

/// What the three live sequences (``Watcher``, ``IndexWatcher``, ``RecordObserver``) share:
/// a non-blocking `poll`, and waiting for the journal to pass their sequence between polls.
protocol PollingLoop: AnyObject {
    associatedtype Value
    var store: Store { get }
    /// The journal sequence the consumer has seen.
    var waitSequence: UInt64 { get }
    var isCancelled: Bool { get }
    func poll() throws -> Value?
}

extension PollingLoop {
    /// Polls, blocking the thread between commits, for up to `timeout` seconds.
    func blockingNext(timeout: TimeInterval) throws -> Value? {
        let deadline = Date().addingTimeInterval(timeout)
        while !isCancelled {
            if let value = try poll() { return value }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0, store.core.commits.waitBlocking(after: waitSequence, timeout: remaining) else { return nil }
        }
        return nil
    }

    /// Polls, suspending between commits, until a value, cancellation of the loop or of the task.
    func asyncNext() async throws -> Value? {
        while !isCancelled && !Task.isCancelled {
            if let value = try poll() { return value }
            await store.core.commits.wait(after: waitSequence)
        }
        return nil
    }
}
