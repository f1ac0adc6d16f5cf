import Feedstore
import DemoFeed
import Foundation

/// Every shape a watcher can take, over the same store and the same one-row update (a shown
/// message's date moves, so the row moves): from the start of the commit to the batch in the
/// consumer's hands, p50 and p99. Shapes take turns in rounds, so all of them are measured over
/// the same span of a noisy machine, and each is reported as a ratio to the unwindowed watcher
/// of the same run.
struct WatchShapes {
    let sizes: [Int]
    let directory: String
    let updates: Int
    static let round = 50

    enum Shape: String, CaseIterable {
        case plain = "objects, unwindowed"
        case windowed = "objects, window of 100"
        case sectioned = "objects, a section per folder"
        case windowedSectioned = "objects, window of 100, sectioned"
        case indexes = "indexes-only, unwindowed"
        case indexesWindowed = "indexes-only, window of 100"
        case blocking = "objects, blocking next(timeout:) on a thread"
        case async = "objects, AsyncSequence in a task"
    }

    struct Row {
        var size: Int
        var shape: Shape
        /// Start of the commit → batch in hand; the commit alone; the commit's end → batch in hand.
        var latency: (p50: Double, p99: Double)
        var commit: (p50: Double, p99: Double)
        var batch: (p50: Double, p99: Double)
    }

    /// A consumer that receives batches somewhere else (a thread or a task), one each time it is
    /// let go, and reports when. Between its rounds it is held at its gate, so its watcher's
    /// changes coalesce and it takes no time from the other shapes.
    final class Receiver: @unchecked Sendable {
        private let received = DispatchSemaphore(value: 0)
        private var at: UInt64 = 0
        let gate: () -> Void

        init(gate: @escaping () -> Void) { self.gate = gate }

        /// Waits until the consumer has the batch it was let go for; the time it had it.
        func take() -> UInt64 {
            received.wait()
            return at
        }

        func deliver() {
            at = Timing.now
            received.signal()
        }

        /// A consumer on a thread of its own, blocked in `next(timeout:)`.
        static func blocking(_ watcher: Watcher<Message>) -> Receiver {
            let gate = DispatchSemaphore(value: 0)
            let receiver = Receiver { gate.signal() }
            Thread {
                while true {
                    gate.wait()
                    while !watcher.isCancelled {
                        if (try? watcher.next(timeout: 1)) != nil { break }
                    }
                    if watcher.isCancelled { return }
                    receiver.deliver()
                }
            }.start()
            return receiver
        }

        /// A consumer in a task, suspended in the watcher's `AsyncSequence`.
        static func async(_ watcher: Watcher<Message>) -> (Receiver, Task<Void, Never>) {
            let (gates, opener) = AsyncStream<Void>.makeStream()
            let receiver = Receiver { opener.yield(()) }
            let task = Task.detached {
                var batches = watcher.makeAsyncIterator()
                for await _ in gates {
                    guard (try? await batches.next()) != nil else { return }
                    receiver.deliver()
                }
            }
            return (receiver, task)
        }
    }

    func run(_ emitRow: (Row) -> Void) async throws {
        for size in sizes {
            let path = directory + "/shapes-\(size)"
            let store = try WatcherBench.populatedStore(at: path, size: size)
            let query = Query(Message.self, index: "byFolderDate")
            let middle = size / 2
            let window = WatchWindow(offset: middle, limit: 100)
            var rng = SplitMix(state: UInt64(size) &+ 7)

            let plain = store.watch(query)
            let windowed = store.watch(query, options: WatchOptions(window: window))
            let sectioned = store.watch(query, options: WatchOptions(sectionBy: 1))
            let windowedSectioned = store.watch(query, options: WatchOptions(sectionBy: 1, window: window))
            let indexes = store.watchIndexes(query)
            let indexesWindowed = store.watchIndexes(query, options: WatchOptions(window: window))
            let polled: [Shape: () throws -> Bool] = [
                .plain: { try plain.poll() != nil }, .windowed: { try windowed.poll() != nil },
                .sectioned: { try sectioned.poll() != nil }, .windowedSectioned: { try windowedSectioned.poll() != nil },
                .indexes: { try indexes.poll() != nil }, .indexesWindowed: { try indexesWindowed.poll() != nil },
            ]
            for poll in polled.values { _ = try poll() }  // initial snapshots, not measured
            let blockingWatcher = store.watch(query), asyncWatcher = store.watch(query)
            let blocking = Receiver.blocking(blockingWatcher)
            let (async, asyncTask) = Receiver.async(asyncWatcher)
            let receivers: [Shape: Receiver] = [.blocking: blocking, .async: async]
            for receiver in receivers.values {
                receiver.gate()
                _ = receiver.take()  // the initial snapshot, not measured
            }

            var samples: [Shape: [Double]] = [:], commits: [Shape: [Double]] = [:], batches: [Shape: [Double]] = [:]
            for round in 0..<(updates * Shape.allCases.count / Self.round) {
                let shape = Shape.allCases[round % Shape.allCases.count]
                // Everyone catches up, untimed, so each round starts from a quiet state.
                for poll in polled.values { _ = try poll() }
                if let receiver = receivers[shape] {
                    receiver.gate()
                    _ = receiver.take()
                }
                for _ in 0..<Self.round {
                    // A row the windows show, so that every shape has the same work to do.
                    let position = middle + Int.random(in: 0..<100, using: &rng)
                    // Read synchronously, on this task's thread (a closure that is not async).
                    let rowID: () throws -> UInt64? = { try store.read { try $0.object(at: position, in: query) }?.id }
                    guard let id = try rowID() else { fatalError("no row at \(position)") }
                    receivers[shape]?.gate()
                    let start = Timing.now
                    try WatcherBench.moveDate(of: id, in: store, using: &rng)
                    let committed = Timing.now
                    let end: UInt64
                    switch shape {
                    case .blocking, .async: end = receivers[shape]!.take()
                    default:
                        guard try polled[shape]!() else { fatalError("\(shape): no batch") }
                        end = Timing.now
                    }
                    samples[shape, default: []].append(Double(end - start) / 1_000)
                    commits[shape, default: []].append(Double(committed - start) / 1_000)
                    batches[shape, default: []].append((Double(end) - Double(committed)) / 1_000)
                }
            }
            for watcher in [plain, windowed, sectioned, windowedSectioned, blockingWatcher, asyncWatcher] { watcher.cancel() }
            blocking.gate()
            asyncTask.cancel()
            indexes.cancel()
            indexesWindowed.cancel()
            store.close()
            try? FileManager.default.removeItem(atPath: path)
            for shape in Shape.allCases {
                emitRow(Row(size: size, shape: shape, latency: WatcherBench.percentiles(samples[shape] ?? []),
                            commit: WatcherBench.percentiles(commits[shape] ?? []), batch: WatcherBench.percentiles(batches[shape] ?? [])))
            }
        }
    }

    static let header = """
        | rows | watcher | start of commit → batch p50 / p99 µs | p50 ÷ unwindowed objects | commit p50 / p99 µs | end of commit → batch p50 / p99 µs |
        |---:|---|---:|---:|---:|---:|
        """

    /// Each target of the watch pipeline, met or not, with the figures of this run.
    static func targets(shapes: [Row], fanOut: [WatcherFanOut.Row], idle: WatcherFanOut.Idle) -> [String] {
        func verdict(_ met: Bool) -> String { met ? "**met**" : "**not met**" }
        var lines: [String] = []
        let windowRatios = shapes.filter { $0.shape == .windowed }.compactMap { w in
            shapes.first { $0.size == w.size && $0.shape == .plain }.map { w.latency.p50 / $0.latency.p50 }
        }
        if let worst = windowRatios.max() {
            lines.append("- Window of 100 ≤ 1.2× the unwindowed watcher (p50, every size): " + verdict(worst <= 1.2)
                + String(format: ", at most %.2f×", worst))
        }
        if let one = fanOut.first, let most = fanOut.last, most.watchers > one.watchers {
            let latency = most.latency.p50 / one.latency.p50, cpu = most.cpuPerCommit / one.cpuPerCommit
            lines.append("- \(most.watchers.formatted()) watchers: the affected watcher's p50 ≤ 1.5× one watcher's: " + verdict(latency <= 1.5)
                + String(format: " (%.2f×); CPU per commit ≤ 1.5×: ", latency) + verdict(cpu <= 1.5) + String(format: " (%.2f×)", cpu))
        }
        let ratio = idle.withPerSecond / idle.withoutPerSecond
        lines.append("- \(idle.watchers.formatted()) idle watchers keep ≥ 90% of one-row commit throughput: " + verdict(ratio >= 0.9)
            + String(format: " (%.0f%%), %@ bytes per idle watcher", ratio * 100, idle.bytesPerWatcher.formatted()))
        let deltas = Set(shapes.map(\.size)).compactMap { size -> Double? in
            guard let a = shapes.first(where: { $0.size == size && $0.shape == .async }),
                  let b = shapes.first(where: { $0.size == size && $0.shape == .blocking }) else { return nil }
            return a.latency.p50 - b.latency.p50
        }
        if let worst = deltas.max() {
            lines.append("- AsyncSequence delivery adds ≤ 20 µs p50 over blocking next(timeout:): " + verdict(worst <= 20)
                + String(format: ", at most %+.0f µs", worst))
        }
        let largest = shapes.map(\.size).max() ?? 0
        if let batch = shapes.filter({ $0.size == largest && $0.shape != .blocking && $0.shape != .async }).map(\.batch.p50).max() {
            lines.append("- Batch ≤ 50 µs p50 at \(largest.formatted()) rows, from the end of the commit, every polled shape: " + verdict(batch <= 50)
                + String(format: ", at most %.0f µs", batch))
        }
        return lines
    }

    /// What `AsyncSequence` delivery adds over a blocking `next(timeout:)`, per size.
    static func deliverySummary(_ rows: [Row]) -> [String] {
        Set(rows.map(\.size)).sorted().compactMap { size in
            guard let async = rows.first(where: { $0.size == size && $0.shape == .async }),
                  let blocking = rows.first(where: { $0.size == size && $0.shape == .blocking }) else { return nil }
            return "- \(size.formatted()) rows: AsyncSequence delivery p50 " + String(format: "%+.0f µs", async.latency.p50 - blocking.latency.p50)
                + " over blocking next(timeout:)"
        }
    }

    static func format(_ rows: [Row]) -> [String] {
        rows.map { r in
            let base = rows.first { $0.size == r.size && $0.shape == .plain }!.latency.p50
            return "| \(r.size.formatted()) | \(r.shape.rawValue) | "
                + String(format: "%.0f / %.0f | %.2f | %.0f / %.0f | %.0f / %.0f |", r.latency.p50, r.latency.p99, r.latency.p50 / base,
                         r.commit.p50, r.commit.p99, r.batch.p50, r.batch.p99)
        }
    }
}
