import Feedstore
import DemoFeed
import Foundation
import GRDB

/// A search field over one folder of a million messages: `title` contains a word, ignoring case
/// (about 12% of the folder), newest first, live. Measured in one run:
/// - opening a filtered watcher (its first 50 rows) against a full read of the folder;
/// - a one-row commit → batch of the filtered watcher against the unfiltered one over the same
///   folder, both unwindowed, taking turns, each commit moving a message both lists show;
/// - CPU per commit (the write and the list's update) of the filtered watcher showing the newest
///   50 rows, against the same list kept by a re-fetch after every commit (its count and first 50
///   rows: SwiftData's `@Query`, on the same store) and by GRDB's `ValueObservation` of
///   `WHERE folder = 1 AND title LIKE … ORDER BY date DESC LIMIT 50`, with and without the
///   count a list needs for its scroll bar;
/// - the filtered watcher's memory per match.
struct FilteredWatch {
    let rows: Int
    let directory: String
    let word = "invoice"
    let commits: Int

    /// glibc's `malloc_trim`, which returns free heap pages to the system.
    static let trimHeap: (@convention(c) (Int) -> Int32)? = dlsym(nil, "malloc_trim")
        .map { unsafeBitCast($0, to: (@convention(c) (Int) -> Int32).self) }

    /// Inserts `rows` messages of the demo feed (seed 4), all in folder 1, ids from 1, 5,000 a
    /// transaction; `adjust` changes each before it is written.
    static func insertOneFolder(_ rows: Int, into store: Store, adjust: (inout Message) -> Void = { _ in }) throws {
        var feed = DemoFeed(seed: 4)
        var id: UInt64 = 0
        while id < UInt64(rows) {
            try store.write { tx in
                for _ in 0..<min(5_000, rows - Int(id)) {
                    id += 1
                    var m = feed.message(id: id, contacts: 1_000)
                    m.folder = 1
                    adjust(&m)
                    try tx.insert(m)
                }
            }
        }
    }

    func run() throws -> [String] {
        try? FileManager.default.removeItem(atPath: directory)
        let store = try Store(path: directory + "/feedstore", entities: DemoFeed.entities,
                              options: StoreOptions(durability: .none, initialMapSize: 1 << 31,
                                                    journalRetention: JournalRetention(minimumCommits: 100)))
        defer { store.close() }
        try Self.insertOneFolder(rows, into: store)
        let folder = Query(Message.byFolderDate, prefix: 1)
        let search = folder.filter(.contains(\.title, word.uppercased(), caseInsensitive: true))
        let all = try store.read { try $0.objects(in: folder) }
        let matching = all.filter { $0.title.contains(word) }.map(\.id)
        let matches = try store.read { try $0.count(search) }
        precondition(matches == matching.count, "the filter's count \(matches) is not the brute force's \(matching.count)")
        var rng = SplitMix(state: 5)

        // Opening: a full read of the folder, and a filtered watcher's first 50 rows, in turns.
        var fullRead: [Double] = [], open: [Double] = []
        for _ in 0..<3 {
            var start = Timing.now
            blackHole(try store.read { try $0.objects(in: folder) }.count)
            fullRead.append(Timing.micros(since: start))
            start = Timing.now
            let w = store.watch(search, options: WatchOptions(window: WatchWindow(offset: 0, limit: 50)))
            guard let first = try w.poll(), first.inserts.count == 50 else { fatalError("no first window") }
            open.append(Timing.micros(since: start))
            w.cancel()
        }

        // Memory: ten filtered watchers over the whole folder held at once, beyond the mapped file,
        // after the allocator gave back the heap earlier reads freed (which new blocks would reuse).
        _ = Self.trimHeap?(0)
        let before = ProcessMemory.anonymous
        let held = (0..<10).map { _ in store.watchIndexes(search) }
        for watcher in held { _ = try watcher.poll() }
        let bytesPerMatch = Double(ProcessMemory.anonymous - before) / Double(10 * matches)
        for watcher in held { watcher.cancel() }

        func moveDate(of id: UInt64, in tx: WriteTransaction) throws {
            guard var m = try tx.get(Message.self, id: id) else { return }
            m.date = m.date.addingTimeInterval(Double(Int.random(in: -86_400...86_400, using: &rng)))
            try tx.put(m)
        }

        // Commit → batch, a message both lists show; the two watchers take turns.
        let plain = store.watch(folder), filtered = store.watch(search)
        _ = try plain.poll()
        _ = try filtered.poll()
        var plainTimes: [Double] = [], filteredTimes: [Double] = []
        for i in 0..<(2 * commits) {
            let watcher = i % 2 == 0 ? plain : filtered
            let start = Timing.now
            try store.write { tx in try moveDate(of: matching.randomElement(using: &rng)!, in: tx) }
            guard try watcher.poll() != nil else { fatalError("no batch") }
            (i % 2 == 0 ? { plainTimes.append($0) } : { filteredTimes.append($0) })(Timing.micros(since: start))
            // The other watcher catches up outside the timing.
            _ = try (i % 2 == 0 ? filtered : plain).poll()
        }
        plain.cancel()
        filtered.cancel()

        // CPU per commit of a list of the newest 50 matches, any message of the folder changing.
        let window = store.watch(search, options: WatchOptions(window: WatchWindow(offset: 0, limit: 50)))
        _ = try window.poll()
        let watcherCPU = try ProcessCPU.microsPerCall(commits) {
            try store.write { tx in try moveDate(of: all.randomElement(using: &rng)!.id, in: tx) }
            _ = try window.poll()
        }
        window.cancel()
        let refetches = max(5, commits / 100)
        let refetchCPU = try ProcessCPU.microsPerCall(refetches) {
            try store.write { tx in try moveDate(of: all.randomElement(using: &rng)!.id, in: tx) }
            blackHole(try store.read { tx in (try tx.count(search), try tx.objects(in: search, limit: 50)) })
        }

        // GRDB, the same list.
        let pool = try GRDBPeer.open(directory + "/grdb.sqlite", durable: false)
        try GRDBPeer.copyMessages(from: store, to: pool)
        let request = Message.filter(Column("folder") == 1 && Column("title").like("%\(word.uppercased())%")).order(Column("date").desc)
        let queue = DispatchQueue(label: "grdb-observer")
        func grdbCPU(counting: Bool, _ n: Int) throws -> Double {
            let changed = Signal()
            let observation = ValueObservation.tracking { db in
                (try request.limit(50).fetchAll(db), counting ? try request.fetchCount(db) : 0)
            }.start(in: pool, scheduling: .async(onQueue: queue), onError: { fatalError("\($0)") }, onChange: { _ in changed.signal() })
            guard changed.wait() else { fatalError("no initial value") }
            defer { observation.cancel() }
            return try ProcessCPU.microsPerCall(n) {
                let id = all.randomElement(using: &rng)!.id
                try pool.write { db in
                    guard var m = try Message.fetchOne(db, key: id) else { return }
                    m.date = m.date.addingTimeInterval(Double(Int.random(in: -86_400...86_400, using: &rng)))
                    try m.update(db)
                }
                guard changed.wait() else { fatalError("no change notified") }
            }
        }
        let grdbWindowCPU = try grdbCPU(counting: false, commits)
        let grdbCountedCPU = try grdbCPU(counting: true, refetches)
        try pool.close()

        func us(_ x: Double) -> String { x >= 10_000 ? Int(x).formatted() : String(format: "%.0f", x) }
        func ratio(_ x: Double) -> String { x >= 10 ? "\(Int(x).formatted())×" : String(format: "%.2f×", x) }
        let p = Timing(samples: plainTimes), f = Timing(samples: filteredTimes)
        return [
            "| measure | Feedstore | against | ratio |",
            "|---|---:|---:|---:|",
            "| open: first 50 rows of the filtered watcher, p50 ms (against: a full read of the folder) | \(String(format: "%.0f", Timing(samples: open).p50 / 1_000)) | \(String(format: "%.0f", Timing(samples: fullRead).p50 / 1_000)) | \(ratio(Timing(samples: open).p50 / Timing(samples: fullRead).p50)) |",
            "| one-row commit → batch, p50 µs (against: the unfiltered watcher of the folder) | \(us(f.p50)) | \(us(p.p50)) | \(ratio(f.p50 / p.p50)) |",
            "| one-row commit → batch, p99 µs (against: the unfiltered watcher of the folder) | \(us(f.p99)) | \(us(p.p99)) | \(ratio(f.p99 / p.p99)) |",
            "| CPU per commit, newest 50 matches, µs (against: a re-fetch of its count and rows after each commit) | \(us(watcherCPU)) | \(us(refetchCPU)) | \(ratio(refetchCPU / watcherCPU)) |",
            "| CPU per commit, newest 50 matches, µs (against: GRDB `ValueObservation`, `LIMIT 50`) | \(us(watcherCPU)) | \(us(grdbWindowCPU)) | \(ratio(grdbWindowCPU / watcherCPU)) |",
            "| CPU per commit, newest 50 matches, µs (against: GRDB `ValueObservation`, `LIMIT 50` and its `COUNT(*)`) | \(us(watcherCPU)) | \(us(grdbCountedCPU)) | \(ratio(grdbCountedCPU / watcherCPU)) |",
            "| memory of the filtered watcher, bytes per match | \(String(format: "%.0f", bytesPerMatch)) | – | – |",
            "",
            "\(rows.formatted()) messages in one folder, \(matches.formatted()) of them (\(String(format: "%.1f", 100 * Double(matches) / Double(rows)))%) with \"\(word)\" in their title; \(commits.formatted()) commits per shape (\(refetches) for the re-fetch and GRDB with its count, which read the folder each time). The ratio column is the other's figure over Feedstore's for CPU, Feedstore's over the other's for time.",
        ]
    }
}
