import Feedstore
import DemoFeed
import Foundation

/// Watchers over the demo feed at several sizes: a one-row update → the batch delivered (p50,
/// p99; the commit and the batch computation separately), and opening a watcher with a first
/// window of 100 rows.
struct WatcherBench {
    let sizes: [Int]
    let directory: String
    let updates = 2_000
    /// Updates per turn of one watcher.
    static let round = 100

    struct Row {
        var size: Int
        var commit: (p50: Double, p99: Double)
        var batch: (p50: Double, p99: Double)
        var total: (p50: Double, p99: Double)
        var open: (p50: Double, p99: Double)
        var sectionedBatch: (p50: Double, p99: Double)
        /// Anonymous memory added by an indexes-only watcher after its initial batch and 200 batches.
        var indexesOnlyMemory: Int
        /// Pages and write calls per one-row commit (LMDB writes each dirty page with pwrite, or
        /// runs of adjacent ones with writev; the meta page is one more call).
        var pagesPerCommit: Double
        var writeCallsPerCommit: Double
    }

    static func percentiles(_ samples: [Double]) -> (p50: Double, p99: Double) {
        let timing = Timing(samples: samples)
        return (timing.p50, timing.p99)
    }

    /// The demo feed with `size` messages, durability none, as the watcher measurements use it.
    static func populatedStore(at path: String, size: Int) throws -> Store {
        let store = try Store(path: path, entities: DemoFeed.entities,
                              options: StoreOptions(durability: .none, initialMapSize: 1 << 30,
                                                    journalRetention: JournalRetention(minimumCommits: 100)))
        var feed = DemoFeed(seed: 1)
        try feed.populate(store, messages: size, contacts: 1_000, batch: 5_000)
        return store
    }

    /// Times opening a watcher of byFolderDate with a first window of 100 rows at the offset
    /// `offset` gives, to its first batch, `count` times; µs each.
    static func openTimes(_ store: Store, count: Int = 200, offset: () -> Int) throws -> [Double] {
        try (0..<count).map { _ in
            let start = Timing.now
            let watcher = store.watch(Query(Message.self, index: "byFolderDate"),
                                      options: WatchOptions(window: WatchWindow(offset: offset(), limit: 100)))
            guard let first = try watcher.poll(), first.inserts.count == 100 else { fatalError("no first window") }
            let elapsed = Timing.micros(since: start)
            watcher.cancel()
            return elapsed
        }
    }

    /// The measured one-row update: message `id`'s date moves by up to an hour either way.
    static func moveDate(of id: UInt64, in store: Store, using rng: inout SplitMix) throws {
        try store.write { tx in
            guard var m = try tx.get(Message.self, id: id) else { return }
            m.date = m.date.addingTimeInterval(Double(Int.random(in: 1...3_600, using: &rng)) * (Bool.random(using: &rng) ? 1 : -1))
            try tx.put(m)
        }
    }

    func run() throws -> [Row] {
        var rows: [Row] = []
        for size in sizes {
            let path = directory + "/watch-\(size)"
            let store = try Self.populatedStore(at: path, size: size)
            let query = Query(Message.self, index: "byFolderDate")
            var rng = SplitMix(state: UInt64(size))

            // Opening with a first window of 100 rows in the middle.
            let open = try Self.openTimes(store) { size / 2 }

            // One-row updates: a random message's date changes (it moves), then the batch. The plain
            // and the sectioned watcher take turns in rounds of 100 updates, so that both are
            // measured across the same span of this shared machine's ups and downs. The watcher
            // whose turn it is not catches up, untimed, before its next round.
            let watchers = [store.watch(query, options: WatchOptions()), store.watch(query, options: WatchOptions(sectionBy: 1))]
            for watcher in watchers { _ = try watcher.poll() }  // the initial snapshots, not measured
            var commit: [[Double]] = [[], []], batch: [[Double]] = [[], []]
            var writes = (bytes: 0, calls: 0)
            for round in 0..<(2 * updates / Self.round) {
                let turn = round % 2
                _ = try watchers[turn].poll()
                let writesBefore = ProcessWrites.current
                for _ in 0..<Self.round {
                    let id = UInt64.random(in: 1...UInt64(size), using: &rng)
                    let t0 = DispatchTime.now().uptimeNanoseconds
                    try Self.moveDate(of: id, in: store, using: &rng)
                    let t1 = DispatchTime.now().uptimeNanoseconds
                    guard let b = try watchers[turn].poll(), b.moves.count + b.updates.count == 1 else { fatalError("missing batch") }
                    let t2 = DispatchTime.now().uptimeNanoseconds
                    commit[turn].append(Double(t1 - t0) / 1_000)
                    batch[turn].append(Double(t2 - t1) / 1_000)
                }
                let writesAfter = ProcessWrites.current
                writes.bytes += writesAfter.bytes - writesBefore.bytes
                writes.calls += writesAfter.calls - writesBefore.calls
            }
            for watcher in watchers { watcher.cancel() }
            let plain = (commit: commit[0], batch: batch[0]), sectioned = (commit: commit[1], batch: batch[1])
            // An indexes-only watcher over every row: memory beyond the mapped file.
            let memoryBefore = ProcessMemory.anonymous
            let indexes = store.watchIndexes(query, options: WatchOptions(sectionBy: 1))
            _ = try indexes.poll()
            for _ in 0..<200 {
                let id = UInt64.random(in: 1...UInt64(size), using: &rng)
                try store.write { tx in
                    guard var m = try tx.get(Message.self, id: id) else { return }
                    m.isRead.toggle()
                    try tx.put(m)
                }
                _ = try indexes.poll()
                _ = try indexes.object(at: RowPath(section: 0, row: 0))
            }
            let indexesOnlyMemory = ProcessMemory.anonymous - memoryBefore
            indexes.cancel()
            store.close()
            try? FileManager.default.removeItem(atPath: path)
            let row = Row(size: size, commit: Self.percentiles(plain.commit), batch: Self.percentiles(plain.batch),
                          total: Self.percentiles(zip(plain.commit, plain.batch).map { $0 + $1 }), open: Self.percentiles(open),
                          sectionedBatch: Self.percentiles(sectioned.batch), indexesOnlyMemory: indexesOnlyMemory,
                          pagesPerCommit: Double(writes.bytes) / 4_096 / Double(2 * updates),
                          writeCallsPerCommit: Double(writes.calls) / Double(2 * updates))
            print(Self.format(row))
            rows.append(row)
        }
        return rows
    }

    static let header = """
        | rows | commit p50 / p99 µs | pages / write calls per commit | batch p50 / p99 µs | update → batch p50 / p99 µs | sectioned batch p50 / p99 µs | open + first 100 rows p50 / p99 µs | indexes-only watcher memory |
        |---:|---:|---:|---:|---:|---:|---:|---:|
        """

    static func format(_ r: Row) -> String {
        func f(_ p: (p50: Double, p99: Double)) -> String { String(format: "%.0f / %.0f", p.p50, p.p99) }
        return "| \(r.size.formatted()) | \(f(r.commit)) | \(String(format: "%.1f / %.1f", r.pagesPerCommit, r.writeCallsPerCommit)) | \(f(r.batch)) | \(f(r.total)) | \(f(r.sectionedBatch)) | \(f(r.open)) | \(r.indexesOnlyMemory / 1024) KB |"
    }
}
