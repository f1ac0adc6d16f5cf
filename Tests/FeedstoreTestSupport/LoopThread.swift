import Foundation

/// A blocking loop (a shipper's or a follower's `run(while:)`) on a thread of its own, until
/// stopped: what tests of running replication start, then stop before they check.
public final class LoopThread: @unchecked Sendable {
    private let running = Locked(true)
    private let failure = Locked<(any Error)?>(nil)
    private let finished = DispatchSemaphore(value: 0)
    private let joined = Locked(false)

    /// Starts `loop`, passing it the check that turns false once ``stop()`` is called.
    public init(_ loop: @escaping @Sendable (_ keepGoing: () -> Bool) throws -> Void) {
        let (running, failure, finished) = (running, failure, finished)
        Thread {
            do { try loop { running.current } } catch { failure.withLock { $0 = error } }
            finished.signal()
        }.start()
    }

    /// What the loop threw, if it has.
    public var error: (any Error)? { failure.current }

    /// Asks the loop to stop and waits until it has; what it threw, if anything.
    @discardableResult
    public func stop() -> (any Error)? {
        running.withLock { $0 = false }
        let wait = joined.withLock { joined in
            defer { joined = true }
            return !joined
        }
        if wait { finished.wait() }
        return failure.current
    }
}
