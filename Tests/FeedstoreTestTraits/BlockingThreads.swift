import Foundation

/// Threads of one test's own, as Swift concurrency's shared threads would be if the test were
/// alone: two, so that a test that blocks one while a task of its own needs another goes on as
/// it would there. The threads end once the test has ended and they are idle.
///
/// On the shared threads (two on a 2-core machine) a test's continuation queues behind every
/// test not yet started, each run to its end: an async test waiting for a frame waited there
/// behind minutes of synchronous tests, and its guard ran out.
final class BlockingThreads: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var next = 0
    private var running = 0
    private var ended = false
    private let name: String

    init(name: String, count: Int = 2) {
        self.name = name
        condition.withLock { running = count }
        for index in 0..<count { start(index) }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        // A job after the end (an unstructured task's continuation that kept the preference)
        // gets a thread of its own.
        if running == 0 {
            running = 1
            condition.unlock()
            start(0)
            return
        }
        condition.signal()
        condition.unlock()
    }

    /// The test has ended: each thread ends once no job is left.
    func end() {
        condition.lock()
        ended = true
        condition.broadcast()
        condition.unlock()
    }

    private func start(_ index: Int) {
        let thread = Thread { [self] in work() }
        thread.name = "\(name.prefix(12)) \(index)"
        thread.start()
    }

    private func work() {
        while true {
            condition.lock()
            while next == jobs.count && !ended { condition.wait() }
            guard next < jobs.count else {
                running -= 1
                condition.unlock()
                return
            }
            let job = jobs[next]
            next += 1
            if next == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                next = 0
            }
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
