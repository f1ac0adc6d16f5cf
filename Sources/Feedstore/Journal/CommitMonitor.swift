import Foundation

/// Wakes whoever waits for the journal to pass a sequence. Commits of this process are
/// announced by the writer as soon as they are durable. Commits of other processes (or of
/// another environment on the same files) are found by polling the journal head every
/// ``pollInterval`` while anyone waits. That is a read of one 8-byte value, so idle watchers cost
/// almost nothing, and delivery from another process takes at most one interval.
final class CommitMonitor: @unchecked Sendable {
    static let pollInterval: useconds_t = 5_000

    private struct Waiter {
        var after: UInt64
        /// Resumes a suspended task or signals a blocked thread.
        var resume: @Sendable () -> Void
    }

    private struct State {
        var head: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0
        var polling = false
        var closed = false
    }

    private unowned let core: StoreCore
    private let state = Protected(State())

    init(core: StoreCore) { self.core = core }

    /// Records that the journal reached `sequence` and wakes the waiters it satisfies.
    func published(_ sequence: UInt64) {
        let ready: [Waiter] = state.withLock { s in
            guard sequence > s.head else { return [] }
            s.head = sequence
            let ready = s.waiters.filter { $0.value.after < sequence }
            for key in ready.keys { s.waiters[key] = nil }
            return Array(ready.values)
        }
        for waiter in ready { waiter.resume() }
    }

    /// Returns once the journal is past `sequence`, the task is cancelled, or the store closes.
    func wait(after sequence: UInt64) async {
        let id: UInt64 = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                guard enqueue(id, after: sequence, resume: { continuation.resume() }) else {
                    return continuation.resume()  // already past, or closed
                }
                // Cancelled before the waiter was queued: the handler found nothing to resume.
                // Whoever removes the waiter resumes it, exactly once.
                if Task.isCancelled { state.withLock { $0.waiters.removeValue(forKey: id) }?.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Blocks the calling thread until the journal is past `sequence`, the store closes, or
    /// `timeout` seconds pass; returns false on timeout.
    func waitBlocking(after sequence: UInt64, timeout: TimeInterval) -> Bool {
        let id: UInt64 = state.withLock { s in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        let signal = DispatchSemaphore(value: 0)
        guard enqueue(id, after: sequence, resume: { signal.signal() }) else { return true }
        if signal.wait(timeout: .now() + timeout) == .success { return true }
        // Timed out, unless a wake-up raced the timeout.
        if state.withLock({ $0.waiters.removeValue(forKey: id) }) != nil { return false }
        signal.wait()
        return true
    }

    /// Registers a waiter unless the journal is already past `sequence` or the store is closed
    /// (then returns false and the caller must not wait); starts polling when needed.
    private func enqueue(_ id: UInt64, after sequence: UInt64, resume: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { s -> Bool in
            if s.head > sequence || s.closed { return false }
            s.waiters[id] = Waiter(after: sequence, resume: resume)
            if !s.polling {
                s.polling = true
                startPolling()
            }
            return true
        }
    }

    private func startPolling() {
        let thread = Thread { [self] in
            while true {
                let stop = state.withLock { s -> Bool in
                    if s.waiters.isEmpty || s.closed {
                        s.polling = false
                        return true
                    }
                    return false
                }
                if stop { return }
                if let head = try? core.withReadTransaction({ txn in try core.system.newestSequence(in: txn) }) {
                    published(head)
                }
                usleep(Self.pollInterval)
            }
        }
        thread.name = "Feedstore commit monitor"
        thread.start()
    }

    /// Wakes every waiter once (they check their own state and wait again if they need to).
    func wakeAll() {
        let all: [Waiter] = state.withLock { s in
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in all { waiter.resume() }
    }

    /// Wakes every waiter for good (the store is closing).
    func close() {
        let all: [Waiter] = state.withLock { s in
            s.closed = true
            defer { s.waiters = [:] }
            return Array(s.waiters.values)
        }
        for waiter in all { waiter.resume() }
    }
}
