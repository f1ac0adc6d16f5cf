import Feedstore
import DemoFeed
import Foundation

/// Many watchers in one process, as a server keeping one live query per client has them: W
/// watchers on distinct ranges (one contact's messages each), every one iterated by a task of
/// its own, and one-row commits to the first watcher's range only. Measured: commit start → that
/// watcher's batch, and the process's CPU time per commit. Then 100,000 idle watchers attached
/// (on ranges no commit touches): one-row commit throughput against none (median rounds, measured
/// before and after), and memory per watcher.
struct WatcherFanOut {
    let messages: Int
    let contacts: Int
    let directory: String
    let commits: Int
    let idleWatchers: Int

    struct Row {
        var watchers: Int
        var latency: (p50: Double, p99: Double)
        var cpuPerCommit: Double
    }

    struct Idle {
        var watchers: Int
        var withoutPerSecond: Double
        var withPerSecond: Double
        var bytesPerWatcher: Int
    }

    /// Counts what the watcher tasks receive; the first watcher's deliveries are timed.
    final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private var initial = 0
        let first = WatchShapes.Receiver(gate: {})
        func started() { lock.withLock { initial += 1 } }
        var startedCount: Int { lock.withLock { initial } }
    }

    func run(counts: [Int], _ emitRow: (Row) -> Void) throws -> Idle {
        let path = directory + "/fan-out"
        let store = try Store(path: path, entities: DemoFeed.entities,
                              options: StoreOptions(durability: .none, initialMapSize: 1 << 30,
                                                    journalRetention: JournalRetention(minimumCommits: 100)))
        var feed = DemoFeed(seed: 3)
        try feed.populate(store, messages: messages, contacts: contacts, batch: 5_000)
        let target = try store.read { try $0.query(Message.self, index: "byContact", range: .prefix(.uint(1))) }.map(\.id)
        var rng = SplitMix(state: 11)
        func retitle() throws {
            let id = target[Int.random(in: 0..<target.count, using: &rng)]
            try store.write { tx in
                guard var m = try tx.get(Message.self, id: id) else { return }
                m.title = "t\(UInt64.random(in: 0..<UInt64.max, using: &rng))"
                try tx.put(m)
            }
        }

        for count in counts {
            let tally = Tally()
            let watchers = (1...count).map { store.watch(Query(Message.self, index: "byContact", range: .prefix(.uint(UInt64($0))))) }
            let tasks = watchers.enumerated().map { i, watcher in
                Task.detached {
                    var initial = true
                    for try await _ in watcher {
                        if initial {
                            initial = false
                            tally.started()
                        } else if i == 0 {
                            tally.first.deliver()
                        }
                    }
                }
            }
            while tally.startedCount < count { usleep(1_000) }
            usleep(100_000)  // let every task settle into its wait
            var samples: [Double] = []
            let cpu0 = ProcessUsage.now.cpuSeconds
            for _ in 0..<commits {
                let start = Timing.now
                try retitle()
                samples.append(Double(tally.first.take() - start) / 1_000)
            }
            let cpu = (ProcessUsage.now.cpuSeconds - cpu0) / Double(commits)
            for watcher in watchers { watcher.cancel() }
            for task in tasks { task.cancel() }
            emitRow(Row(watchers: count, latency: WatcherBench.percentiles(samples), cpuPerCommit: cpu * 1e6))
        }

        // Throughput of one-row commits with no watcher, then with many idle ones attached, then
        // with none again: five rounds of `commits` each time, the median round of each.
        // Each phase starts from a journal in its steady state: the keys of commits trimmed
        // before it (the population's hundreds of thousands) are removed first, or the phase
        // that happens to follow their trimming pays for removing them, 128 keys a commit.
        func throughput() throws -> [Double] {
            try store.trimJournal()
            return try (0..<5).map { _ in
                let start = Timing.now
                for _ in 0..<commits { try retitle() }
                return Double(commits) / (Double(Timing.now - start) / 1e9)
            }
        }
        func median(_ rates: [Double]) -> Double { rates.sorted()[rates.count / 2] }
        let before = try throughput()
        let memory0 = ProcessMemory.anonymous
        let idle = (0..<idleWatchers).map { i in
            store.watch(Query(Message.self, index: "byContact", range: .prefix(.uint(UInt64(10_000_000 + i)))))
        }
        for watcher in idle { _ = try watcher.poll() }
        let bytes = (ProcessMemory.anonymous - memory0) / max(1, idleWatchers)
        let with = median(try throughput())
        for watcher in idle { watcher.cancel() }
        let without = median(before + (try throughput()))
        store.close()
        try? FileManager.default.removeItem(atPath: path)
        return Idle(watchers: idleWatchers, withoutPerSecond: without, withPerSecond: with, bytesPerWatcher: bytes)
    }

    static let header = """
        | watchers | commit → first watcher's batch p50 / p99 µs | p50 ÷ one watcher | process CPU per commit µs | CPU ÷ one watcher |
        |---:|---:|---:|---:|---:|
        """

    static func format(_ rows: [Row]) -> [String] {
        guard let one = rows.first else { return [] }
        return rows.map { r in
            "| \(r.watchers.formatted()) | " + String(format: "%.0f / %.0f | %.2f | %.0f | %.2f |", r.latency.p50, r.latency.p99,
                                                      r.latency.p50 / one.latency.p50, r.cpuPerCommit, r.cpuPerCommit / one.cpuPerCommit)
        }
    }

    static func format(_ idle: Idle) -> [String] {
        [
            "| idle watchers attached | one-row commits/s | ratio to none | memory per idle watcher |",
            "|---:|---:|---:|---:|",
            "| 0 | \(Int(idle.withoutPerSecond).formatted()) | 1.00 | – |",
            "| \(idle.watchers.formatted()) | \(Int(idle.withPerSecond).formatted()) | "
                + String(format: "%.2f", idle.withPerSecond / idle.withoutPerSecond) + " | \(idle.bytesPerWatcher.formatted()) bytes |",
        ]
    }
}
