import Foundation

/// What the live sequences (``BatchWatcher`` of every kind, ``RecordObserver``) share: a
/// non-blocking `poll`, and waiting between polls until the store's change feed routes a change
/// to their subscription (or they are signalled), so a commit that does not concern them never
/// wakes them.
protocol PollingLoop: AnyObject {
    associatedtype Value
    var store: Store { get }
    /// The feed subscription whose news end a wait (registered by the first poll).
    var waitSubscription: FeedSubscription? { get }
    var isCancelled: Bool { get }
    func poll() throws -> Value?
}

extension PollingLoop {
    /// Polls, blocking the thread between changes, for up to `timeout` seconds.
    func blockingNext(timeout: TimeInterval) throws -> Value? {
        let deadline = Date().addingTimeInterval(timeout)
        while !isCancelled {
            if let value = try poll() { return value }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0, let subscription = waitSubscription,
                  store.core.feed.waitBlocking(for: subscription, timeout: remaining) else { return nil }
        }
        return nil
    }

    /// Polls, suspending between changes, until a value, cancellation of the loop or of the task.
    func asyncNext() async throws -> Value? {
        while !isCancelled && !Task.isCancelled {
            if let value = try poll() { return value }
            guard let subscription = waitSubscription else { return nil }
            await store.core.feed.wait(for: subscription)
        }
        return nil
    }
}
