import Feedstore
import Foundation

/// Runs a blocking loop (a shipper's or a follower's) on a thread of its own, for callers in
/// Swift concurrency: the loop's waits never hold one of the few threads that tasks share, and
/// cancelling the calling task makes the loop's keep-going check answer false, so the call
/// returns once the loop has finished its round.
enum OwnThread {
    /// A flag set from the cancellation handler and read by the loop's thread.
    private final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var raised = false
        func raise() { lock.withLock { raised = true } }
        var isRaised: Bool { lock.withLock { raised } }
    }

    /// Runs `loop` on a new thread, passing it a check that turns false once the calling task
    /// is cancelled; returns or throws what the loop does.
    static func run(name: String, _ loop: @escaping @Sendable (_ keepGoing: @escaping () -> Bool) throws -> Void) async throws {
        let cancelled = Flag()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                NamedThread.start(name) {
                    do {
                        try loop { !cancelled.isRaised }
                        continuation.resume()
                    } catch {
                        continuation.resume(throwing: error)
                    }
                }
            }
        } onCancel: {
            cancelled.raise()
        }
    }
}
