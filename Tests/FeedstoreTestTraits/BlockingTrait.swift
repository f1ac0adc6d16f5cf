import Foundation
import Testing

/// `@Suite(.blocking)`: each test of the suite runs on threads of its own (``BlockingThreads``)
/// instead of Swift concurrency's shared threads, for suites whose tests hold their thread
/// (synchronous tests, waits on child processes such as compilers and `storectl`), so that the
/// shared threads stay free for the tests that suspend. As many such tests run at once as the
/// machine has cores, plus one.
///
/// `@Suite(.ownThreads)`: the same threads of its own for each test, with no bound on how many
/// run at once, for suites whose tests wait for events from outside (a server's frames, another
/// process's commits) under a guard: on the shared threads, the continuation that takes an event
/// queues behind every synchronous test not yet run, and the guard's time runs out while the
/// event waits in that queue.
public struct BlockingTrait: SuiteTrait, TestTrait, TestScoping {
    /// Whether the test waits for one of a bounded number of permits (it holds a thread).
    let admitted: Bool

    public var isRecursive: Bool { true }

    /// Each case of each test function, not the suite around them.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        if admitted { await Self.admission.enter() }
        let threads = BlockingThreads(name: test.name)
        do {
            try await withTaskExecutorPreference(threads) { try await function() }
        } catch {
            threads.end()
            if admitted { await Self.admission.leave() }
            throw error
        }
        threads.end()
        if admitted { await Self.admission.leave() }
    }

    private static let admission = Admission(permits: max(2, ProcessInfo.processInfo.activeProcessorCount) + 1)
}

extension Trait where Self == BlockingTrait {
    /// Runs each of the suite's tests on threads of its own (``BlockingTrait``).
    public static var blocking: Self { Self(admitted: true) }

    /// Runs each of the suite's tests on threads of its own, however many run at once
    /// (``BlockingTrait``).
    public static var ownThreads: Self { Self(admitted: false) }
}

/// Lets a bounded number of tests run at once, in the order they asked.
private actor Admission {
    private var permits: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(permits: Int) { self.permits = permits }

    func enter() async {
        guard permits == 0 else {
            permits -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func leave() {
        if waiting.isEmpty { permits += 1 } else { waiting.removeFirst().resume() }
    }
}
