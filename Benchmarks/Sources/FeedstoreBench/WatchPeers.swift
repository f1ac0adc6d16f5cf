import Feedstore
import DemoFeed
import Foundation
import GRDB

/// A live list of one folder of the demo feed (`WHERE folder = 1 ORDER BY date DESC`, an eighth
/// of the messages) kept up to date three ways, on the same data in the same run:
/// - a Feedstore watcher (journal + counted index);
/// - refetch + diff on Feedstore: re-run the range after each commit and compute a
///   `CollectionDifference` of ids, what every FRC replacement starts with;
/// - GRDB's `ValueObservation` of the same query (SQLite, WAL, `synchronous = NORMAL`).
/// Each is timed from the start of the writing transaction to the moment the consumer holds the
/// change (Feedstore stores use durability none, GRDB its default; neither syncs per commit).
struct WatchPeers {
    let sizes: [Int]
    let directory: String
    /// Largest size GRDB and refetch + diff are run at (they cost O(n) per commit).
    var rescanUpTo = 1_000_000

    struct Row {
        var size: Int
        var queryRows: Int
        var feedstore: Timing
        var refetch: Timing?
        var grdb: Timing?
        var feedstoreBulk: Timing
        var refetchBulk: Timing?
        var grdbBulk: Timing?
        var feedstoreOpen: Timing
        var grdbOpen: Timing?
        var feedstoreMemory: Int
        var grdbMemory: Int?
        /// The unread list (`WHERE isRead = 0 ORDER BY date DESC`, half the messages): a read
        /// flag flips, so a row joins or leaves the list.
        var unreadRows = 0
        var feedstoreUnread: Timing
        var grdbUnread: Timing?
    }

    /// Fewer samples where each costs a full query.
    func samples(_ size: Int, rescan: Bool) -> Int { rescan ? max(5, min(200, 20_000_000 / size)) : 1_000 }

    func run(report: (Row) -> Void) throws -> [Row] {
        var rows: [Row] = []
        for size in sizes {
            try? FileManager.default.removeItem(atPath: directory)
            let store = try Store(path: directory + "/feedstore", entities: DemoFeed.entities,
                                  options: StoreOptions(durability: .none, initialMapSize: 1 << 30,
                                                        journalRetention: JournalRetention(minimumCommits: 100)))
            var feed = DemoFeed(seed: 1)
            try feed.populate(store, messages: size, contacts: 1_000, batch: 5_000)
            let folder = Query(Message.self, index: "byFolderDate", range: .prefix(.int(1)))
            let ids = try store.read { try $0.objects(in: folder) }.map(\.id)
            var rng = SplitMix(state: UInt64(size))
            let rescan = size <= rescanUpTo

            /// Moves `count` random messages of the folder to new dates in one commit.
            func moveDates(_ count: Int, write: ([(UInt64, TimeInterval)]) throws -> Void) rethrows {
                try write((0..<count).map { _ in
                    (ids[Int.random(in: 0..<ids.count, using: &rng)], Double(Int.random(in: -86_400...86_400, using: &rng)))
                })
            }
            func feedstoreWrite(_ changes: [(UInt64, TimeInterval)]) throws {
                try store.write { tx in
                    for (id, delta) in changes {
                        guard var m = try tx.get(Message.self, id: id) else { continue }
                        m.date = m.date.addingTimeInterval(delta)
                        try tx.put(m)
                    }
                }
            }

            // Feedstore watcher.
            var open: [Double] = []
            for _ in 0..<100 {
                let start = Timing.now
                let w = store.watch(folder, options: WatchOptions(window: WatchWindow(offset: 0, limit: 100)))
                guard let first = try w.poll(), first.inserts.count == min(100, ids.count) else { fatalError("no first window") }
                open.append(Timing.micros(since: start))
            }
            let watcher = store.watch(folder)
            _ = try watcher.poll()
            func feedstoreSamples(_ n: Int, rows k: Int) throws -> Timing {
                var t: [Double] = []
                for _ in 0..<n {
                    let start = Timing.now
                    try moveDates(k, write: feedstoreWrite)
                    guard try watcher.poll() != nil else { fatalError("no batch") }
                    t.append(Timing.micros(since: start))
                }
                return Timing(samples: t)
            }
            let feedstoreOne = try feedstoreSamples(samples(size, rescan: false), rows: 1)
            let feedstoreBulk = try feedstoreSamples(20, rows: 1_000)
            watcher.cancel()

            // Memory of an indexes-only watcher over the folder, beyond the mapped file.
            let before = ProcessMemory.anonymous
            let indexes = store.watchIndexes(folder)
            _ = try indexes.poll()
            for _ in 0..<100 {
                try moveDates(1, write: feedstoreWrite)
                _ = try indexes.poll()
            }
            let feedstoreMemory = ProcessMemory.anonymous - before
            indexes.cancel()

            // The unread list: flip a random message's read flag.
            let unread = Query(Message.self, index: "unreadByDate")
            let unreadRows = try store.read { try $0.count(unread) }
            func randomID() -> UInt64 { UInt64.random(in: 1...UInt64(size), using: &rng) }
            let unreadWatcher = store.watch(unread)
            _ = try unreadWatcher.poll()
            var unreadTimes: [Double] = []
            for _ in 0..<samples(size, rescan: false) {
                let id = randomID()
                let start = Timing.now
                try store.write { tx in
                    guard var m = try tx.get(Message.self, id: id) else { return }
                    m.isRead.toggle()
                    try tx.put(m)
                }
                guard try unreadWatcher.poll() != nil else { fatalError("no unread batch") }
                unreadTimes.append(Timing.micros(since: start))
            }
            unreadWatcher.cancel()

            var row = Row(size: size, queryRows: ids.count, feedstore: feedstoreOne, feedstoreBulk: feedstoreBulk,
                          feedstoreOpen: Timing(samples: open), feedstoreMemory: feedstoreMemory, unreadRows: unreadRows,
                          feedstoreUnread: Timing(samples: unreadTimes))
            if rescan {
                // Refetch + diff.
                var shown = try store.read { try $0.objects(in: folder) }.map(\.id)
                func refetchSamples(_ n: Int, rows k: Int) throws -> Timing {
                    var t: [Double] = []
                    for _ in 0..<n {
                        let start = Timing.now
                        try moveDates(k, write: feedstoreWrite)
                        let now = try store.read { try $0.objects(in: folder) }.map(\.id)
                        // A change that keeps the order is an empty difference (refetch + diff
                        // would then have to compare values too to find updates).
                        blackHole(now.difference(from: shown))
                        shown = now
                        t.append(Timing.micros(since: start))
                    }
                    return Timing(samples: t)
                }
                row.refetch = try refetchSamples(samples(size, rescan: true), rows: 1)
                row.refetchBulk = try refetchSamples(5, rows: 1_000)

                // GRDB.
                let pool = try GRDBPeer.open(directory + "/grdb.sqlite", durable: false)
                try GRDBPeer.copyMessages(from: store, to: pool)
                let queue = DispatchQueue(label: "grdb-observer")
                var grdbOpen: [Double] = []
                for _ in 0..<20 {
                    let first = Signal()
                    let start = Timing.now
                    let cancellable = ValueObservation.tracking { db in try GRDBPeer.folderRequest(1).limit(100).fetchAll(db) }
                        .start(in: pool, scheduling: .async(onQueue: queue), onError: { fatalError("\($0)") }, onChange: { _ in first.signal() })
                    guard first.wait() else { fatalError("no first value") }
                    grdbOpen.append(Timing.micros(since: start))
                    cancellable.cancel()
                }
                row.grdbOpen = Timing(samples: grdbOpen)
                let grdbBefore = ProcessMemory.anonymous
                let changed = Signal()
                let held = LockedBox<[Message]>([])
                let cancellable = ValueObservation.tracking { db in try GRDBPeer.folderRequest(1).fetchAll(db) }
                    .start(in: pool, scheduling: .async(onQueue: queue), onError: { fatalError("\($0)") }, onChange: { value in
                        held.set(value)
                        changed.signal()
                    })
                guard changed.wait() else { fatalError("no initial value") }
                func grdbWrite(_ changes: [(UInt64, TimeInterval)]) throws {
                    try pool.write { db in
                        for (id, delta) in changes {
                            guard var m = try Message.fetchOne(db, key: id) else { continue }
                            m.date = m.date.addingTimeInterval(delta)
                            try m.update(db)
                        }
                    }
                }
                func grdbSamples(_ n: Int, rows k: Int) throws -> Timing {
                    var t: [Double] = []
                    for _ in 0..<n {
                        let start = Timing.now
                        try moveDates(k, write: grdbWrite)
                        guard changed.wait() else { fatalError("no change notified") }
                        t.append(Timing.micros(since: start))
                    }
                    return Timing(samples: t)
                }
                row.grdb = try grdbSamples(samples(size, rescan: true), rows: 1)
                row.grdbMemory = ProcessMemory.anonymous - grdbBefore
                row.grdbBulk = try grdbSamples(5, rows: 1_000)
                precondition(held.value.count == ids.count)
                cancellable.cancel()

                let unreadChanged = Signal()
                let unreadObservation = ValueObservation.tracking { db in
                    try Message.filter(Column("isRead") == false).order(Column("date").desc).fetchAll(db)
                }.start(in: pool, scheduling: .async(onQueue: queue), onError: { fatalError("\($0)") }, onChange: { _ in unreadChanged.signal() })
                guard unreadChanged.wait() else { fatalError("no initial unread value") }
                var grdbUnread: [Double] = []
                for _ in 0..<samples(size, rescan: true) {
                    let id = randomID()
                    let start = Timing.now
                    try pool.write { db in
                        guard var m = try Message.fetchOne(db, key: id) else { return }
                        m.isRead.toggle()
                        try m.update(db)
                    }
                    guard unreadChanged.wait() else { fatalError("no unread change notified") }
                    grdbUnread.append(Timing.micros(since: start))
                }
                row.grdbUnread = Timing(samples: grdbUnread)
                unreadObservation.cancel()
                try pool.close()
            }
            store.close()
            try? FileManager.default.removeItem(atPath: directory)
            report(row)
            rows.append(row)
        }
        return rows
    }

    static let header = """
        | rows (query rows) | Feedstore watcher: 1-row commit → batch p50 / p99 µs | refetch + diff p50 µs | GRDB ValueObservation p50 µs | GRDB ÷ Feedstore (p50) | 1,000-row commit → batch, Feedstore / refetch / GRDB, p50 ms | open + first 100 rows, Feedstore / GRDB, p50 µs | memory: Feedstore indexes-only watcher / GRDB observation | unread list (rows): 1-row commit → batch p50 µs, Feedstore / GRDB |
        |---:|---:|---:|---:|---:|---:|---:|---:|---:|
        """

    static func format(_ r: Row) -> String {
        func us(_ t: Timing?) -> String { t.map { String(format: "%.0f", $0.p50) } ?? "–" }
        func ms(_ t: Timing?) -> String { t.map { String(format: "%.1f", $0.p50 / 1_000) } ?? "–" }
        let ratio = r.grdb.map { String(format: "%.0f×", $0.p50 / r.feedstore.p50) } ?? "–"
        let grdbMemory = r.grdbMemory.map { "\(($0 / 1_048_576).formatted()) MB" } ?? "–"
        return "| \(r.size.formatted()) (\(r.queryRows.formatted())) | \(String(format: "%.0f / %.0f", r.feedstore.p50, r.feedstore.p99)) | \(us(r.refetch)) | \(us(r.grdb)) | \(ratio) | \(ms(r.feedstoreBulk)) / \(ms(r.refetchBulk)) / \(ms(r.grdbBulk)) | \(us(r.feedstoreOpen)) / \(us(r.grdbOpen)) | \(max(0, r.feedstoreMemory) / 1024) KB / \(grdbMemory) | (\(r.unreadRows.formatted())) \(us(r.feedstoreUnread)) / \(us(r.grdbUnread)) |"
    }

    /// Comma-separated values for the plot.
    static func csv(_ rows: [Row]) -> String {
        var out = "rows,feedstore_p50_us,feedstore_p99_us,refetch_p50_us,grdb_p50_us,feedstore_unread_p50_us,grdb_unread_p50_us\n"
        for r in rows {
            out += "\(r.size),\(r.feedstore.p50),\(r.feedstore.p99),\(r.refetch.map { "\($0.p50)" } ?? ""),\(r.grdb.map { "\($0.p50)" } ?? ""),"
                + "\(r.feedstoreUnread.p50),\(r.grdbUnread.map { "\($0.p50)" } ?? "")\n"
        }
        return out
    }
}
