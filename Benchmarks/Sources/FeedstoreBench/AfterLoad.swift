import Feedstore
import DemoFeed
import Foundation

/// One-row commits right after a bulk load, with the store's default journal retention (the
/// newest 1,000 commits): once the load's commits fall out of retention, the writes that follow
/// remove their journal keys, a bounded number at a time. Each commit moves a random message's
/// date and a watcher of the whole index takes the batch; the commit → batch times are reported
/// in spans of the commits after the load, so that the spans the trimming falls in show.
///
/// Two paces, each after a load of its own: commits back to back, where every commit removes its
/// share of the trimmed keys, and one commit every 5 ms, as an application's writes come, where
/// the writer removes them in the gaps.
///
/// Also measured: one-row commits made by another thread every 5 ms while the load runs (each
/// waits for the load's commit in progress, the store having one writer), and opening a watcher
/// with a first window of 100 rows at a random offset right after the load.
struct AfterLoad {
    let sizes: [Int]
    let directory: String
    var commits = 6_000
    /// The pauses between commits measured, in µs.
    static let gaps = [0, 5_000]
    /// The spans reported, by commit number after the load.
    static let spans: [Range<Int>] = [0..<800, 800..<2_000, 2_000..<4_000, 4_000..<6_000]

    struct Row {
        var size: Int
        /// The pause between commits, µs.
        var gap: Int
        /// Per span: commit → batch p50 and p99 in µs, and the commit alone p99.
        var spans: [(p50: Double, p99: Double, commitP99: Double)]
        var all: (p50: Double, p99: Double)
        /// Journal entries after the last commit, entries of trimmed commits not yet removed
        /// included (the retained one-row commits hold about 1,000).
        var journalEntries: Int
        /// One-row commits while the load runs: p50 and p99 in µs.
        var duringLoad: (p50: Double, p99: Double)
        /// Opening a watcher with its first 100-row window right after the load: p50 and p99 in µs.
        var open: (p50: Double, p99: Double)
    }

    func run() throws -> [Row] {
        var rows: [Row] = []
        for size in sizes {
            for gap in Self.gaps { rows.append(try run(size: size, gap: gap)) }
        }
        return rows
    }

    private func run(size: Int, gap: Int) throws -> Row {
        let path = directory + "/after-load-\(size)"
        try? FileManager.default.removeItem(atPath: path)
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none, initialMapSize: 1 << 30))
        var feed = DemoFeed(seed: 1)
        let duringLoad = try Self.commitsDuring(store) {
            try feed.populate(store, messages: size, contacts: 1_000, batch: 5_000, progress: $0)
        }
        var random = SplitMix(state: UInt64(size) &+ 1)
        let opens = try WatcherBench.openTimes(store) { Int.random(in: 0..<(size - 100), using: &random) }
        let watcher = store.watch(Query(Message.self, index: "byFolderDate"), options: WatchOptions())
        _ = try watcher.poll()
        var rng = SplitMix(state: UInt64(size))
        var total: [Double] = [], commit: [Double] = []
        for _ in 0..<commits {
            if gap > 0 { usleep(UInt32(gap)) }
            let id = UInt64.random(in: 1...UInt64(size), using: &rng)
            let start = Timing.now
            try WatcherBench.moveDate(of: id, in: store, using: &rng)
            commit.append(Timing.micros(since: start))
            guard let b = try watcher.poll(), b.moves.count + b.updates.count == 1 else { fatalError("missing batch") }
            total.append(Timing.micros(since: start))
        }
        watcher.cancel()
        let entries = try store.inspect().journal.entriesRetained
        store.close()
        try? FileManager.default.removeItem(atPath: path)
        let spans = Self.spans.map { span in
            let t = Timing(samples: Array(total[span])), c = Timing(samples: Array(commit[span]))
            return (t.p50, t.p99, c.p99)
        }
        let all = Timing(samples: total)
        let open = Timing(samples: opens), during = Timing(samples: duringLoad)
        return Row(size: size, gap: gap, spans: spans, all: (all.p50, all.p99), journalEntries: entries,
                   duringLoad: (during.p50, during.p99), open: (open.p50, open.p99))
    }

    /// Runs `load` (which reports each of its commits, by messages loaded) while another thread
    /// moves the date of one of the first 5,000 messages every 5 ms, once they are in; returns
    /// those commits' times in µs.
    private static func commitsDuring(_ store: Store, _ load: (_ progress: @escaping (Int) -> Void) throws -> Void) throws -> [Double] {
        let loaded = Locked(0), times = Locked<[Double]>([]), done = Locked(false)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            var rng = SplitMix(state: 99)
            while !done.current {
                usleep(5_000)
                guard loaded.current >= 5_000 else { continue }
                let start = Timing.now
                do { try WatcherBench.moveDate(of: UInt64.random(in: 1...5_000, using: &rng), in: store, using: &rng) } catch {
                    fatalError("a commit during the load failed: \(error)")
                }
                let elapsed = Timing.micros(since: start)
                times.withLock { $0.append(elapsed) }
            }
            finished.signal()
        }.start()
        defer {
            done.withLock { $0 = true }
            finished.wait()
        }
        try load { count in loaded.withLock { $0 = count } }
        return times.current
    }

    static func format(_ rows: [Row]) -> [String] {
        let header = "| messages | commits | " + spans.map { "commits \($0.lowerBound.formatted())–\($0.upperBound.formatted()): commit → batch p50 / p99 µs (commit alone p99)" }
            .joined(separator: " | ") + " | all: p50 / p99 µs | p99 ÷ p50 | journal entries after the run | one-row commits during the load p50 / p99 µs | open + first 100 rows after the load p50 / p99 µs |"
        var lines = [header, "|---:|---|" + String(repeating: "---:|", count: spans.count + 5)]
        for r in rows {
            let cells = r.spans.map { String(format: "%.0f / %.0f (%.0f)", $0.p50, $0.p99, $0.commitP99) }
            let pace = r.gap == 0 ? "back to back" : "one every \(r.gap / 1_000) ms"
            lines.append("| \(r.size.formatted()) | \(pace) | " + cells.joined(separator: " | ")
                + String(format: " | %.0f / %.0f | %.1f | ", r.all.p50, r.all.p99, r.all.p99 / r.all.p50) + "\(r.journalEntries.formatted()) | "
                + String(format: "%.0f / %.0f | %.0f / %.0f |", r.duringLoad.p50, r.duringLoad.p99, r.open.p50, r.open.p99))
        }
        return lines
    }
}
