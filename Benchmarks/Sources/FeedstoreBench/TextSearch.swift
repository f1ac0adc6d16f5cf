import Feedstore
import DemoFeed
import Foundation
import GRDB

/// The demo feed's messages with a text index over their titles (the same entity and records).
struct SearchableMessage: Entity {
    var id: UInt64
    var folder: Int64
    var date: Date
    var title: String
    var isRead: Bool
    var contactId: UInt64

    static let entityName = "Message"
    static let byText = textIndex(\.title, order: \.date.descending)
    static let indexes = Message.indexes + [byText.definition]
}

/// Searching a million messages by the words of their titles, newest first. Titles are the demo
/// feed's two common words and one of 50,000 made-up words (about 20 messages each). Measured in
/// one run, against GRDB with an FTS5 table over the same titles:
/// - the first 50-row window of a one-word query (a common word, a rare one) and of a word
///   prefix at each keystroke (each a new query), read in a new transaction and opened as a
///   watcher; GRDB's `MATCH … ORDER BY date DESC LIMIT 50`;
/// - a one-row commit → batch of a one-word watcher and of a prefix watcher, against the
///   index-range watcher of the folder (all unwindowed, taking turns, each commit moving a
///   message all three show);
/// - CPU per commit of the newest 50 rows with a common word, against GRDB's `ValueObservation`
///   of the FTS5 query, which runs it again after each commit.
struct TextSearchBench {
    let rows: Int
    let directory: String
    let commits: Int

    static func vocabulary(_ count: Int) -> [String] {
        let syllables = ["ka", "lo", "mi", "ne", "ru", "si", "ta", "vo", "ze", "pi", "qua", "dor", "fen", "gal", "hux"]
        var rng = SplitMix(state: 11)
        return (0..<count).map { _ in (0..<4).map { _ in syllables.randomElement(using: &rng)! }.joined() }
    }

    func run() throws -> [String] {
        try? FileManager.default.removeItem(atPath: directory)
        let store = try Store(path: directory + "/feedstore", entities: [Contact.self, SearchableMessage.self],
                              options: StoreOptions(durability: .none, initialMapSize: 1 << 32,
                                                    journalRetention: JournalRetention(minimumCommits: 100)))
        defer { store.close() }
        let words = Self.vocabulary(50_000)
        var rng = SplitMix(state: 5)
        try FilteredWatch.insertOneFolder(rows, into: store) { $0.title += " " + words.randomElement(using: &rng)! }
        let index = SearchableMessage.byText.definition
        func query(_ text: String, prefix: Bool = false) -> Query<Message> {
            let (range, filter) = TextSearch(text, lastWordIsPrefix: prefix).query(on: index)
            return Query(index: index.name, range: range, filter: filter)
        }
        let common = "report", rare = words[0]
        let folder = Query(Message.byFolderDate, prefix: 1)

        // GRDB: the same messages, and an FTS5 table over their titles kept by triggers.
        let pool = try GRDBPeer.open(directory + "/grdb.sqlite", durable: false)
        try GRDBPeer.copyMessages(from: store, to: pool)
        try pool.write { db in
            try db.execute(sql: """
                CREATE VIRTUAL TABLE messageFts USING fts5(title, content='message', content_rowid='id');
                INSERT INTO messageFts(rowid, title) SELECT id, title FROM message;
                CREATE TRIGGER message_ai AFTER INSERT ON message BEGIN
                    INSERT INTO messageFts(rowid, title) VALUES (new.id, new.title); END;
                CREATE TRIGGER message_ad AFTER DELETE ON message BEGIN
                    INSERT INTO messageFts(messageFts, rowid, title) VALUES ('delete', old.id, old.title); END;
                CREATE TRIGGER message_au AFTER UPDATE ON message BEGIN
                    INSERT INTO messageFts(messageFts, rowid, title) VALUES ('delete', old.id, old.title);
                    INSERT INTO messageFts(rowid, title) VALUES (new.id, new.title); END;
                """)
        }
        func ftsRequest(_ match: String) -> SQLRequest<Message> {
            SQLRequest(sql: """
                SELECT message.* FROM message JOIN messageFts ON messageFts.rowid = message.id
                WHERE messageFts MATCH ? ORDER BY message.date DESC LIMIT 50
                """, arguments: [match])
        }
        // The lists agree.
        for (text, match) in [(common, common), (rare, rare)] {
            let ours = try store.read { try $0.objects(in: query(text), limit: 50) }.map(\.id)
            let theirs = try pool.read { try ftsRequest(match).fetchAll($0) }.map(\.id)
            precondition(Set(ours) == Set(theirs) || ours.count == 50, "\(text): \(ours.count) rows here, \(theirs.count) in GRDB")
        }

        /// The median of 5 passes of `body` (after one to warm up), in ms.
        func ms(_ body: () throws -> Void) rethrows -> Double {
            try body()
            var samples: [Double] = []
            for _ in 0..<5 {
                let start = Timing.now
                try body()
                samples.append(Timing.micros(since: start) / 1_000)
            }
            return Timing(samples: samples).p50
        }
        func firstWindow(_ q: Query<Message>) throws -> Double {
            try ms { blackHole(try store.read { try $0.objects(in: q, limit: 50) }) }
        }
        func watcherWindow(_ q: Query<Message>) throws -> Double {
            try ms {
                let w = store.watch(q, options: WatchOptions(window: WatchWindow(offset: 0, limit: 50)))
                guard try w.poll() != nil else { fatalError("no first window") }
                w.cancel()
            }
        }
        func grdbWindow(_ match: String) throws -> Double {
            try ms { blackHole(try pool.read { try ftsRequest(match).fetchAll($0) }) }
        }
        let counts = try store.read { tx in (try tx.count(query(common)), try tx.count(query(rare))) }
        var lines = [
            "| first 50 rows, p50 ms | matches | Feedstore read | Feedstore watcher | GRDB FTS5 | GRDB / Feedstore read |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        func row(_ label: String, _ q: Query<Message>, _ match: String) throws {
            let matches = try store.read { try $0.count(q) }
            let read = try firstWindow(q), watched = try watcherWindow(q), grdb = try grdbWindow(match)
            lines.append("| \(label) | \(matches.formatted()) | \(String(format: "%.2f", read)) | \(String(format: "%.2f", watched)) | \(String(format: "%.2f", grdb)) | \(String(format: "%.1f×", grdb / read)) |")
        }
        try row("one word, common (\"\(common)\")", query(common), common)
        try row("one word, rare (\"\(rare)\")", query(rare), rare)
        try row("two words (\"\(common) \(rare)\")", query("\(common) \(rare)"), "\(common) \(rare)")
        for length in 1...rare.count where length <= 6 {
            let typed = String(rare.prefix(length))
            try row("typed \"\(typed)\" (a prefix)", query(typed, prefix: true), "\(typed)*")
        }
        for length in 2...4 {
            let typed = String(common.prefix(length))
            try row("typed \"\(typed)\" (a prefix)", query(typed, prefix: true), "\(typed)*")
        }

        // Commit → batch: the word's watcher, a prefix's and the folder's, in turns.
        let reports = try store.read { try $0.objects(in: query(common)) }.map(\.id)
        func moveDate(of id: UInt64, in tx: WriteTransaction) throws {
            guard var m = try tx.get(Message.self, id: id) else { return }
            m.date = m.date.addingTimeInterval(Double(Int.random(in: -86_400...86_400, using: &rng)))
            try tx.put(m)
        }
        let watchers = [store.watch(folder), store.watch(query(common)), store.watch(query("rep", prefix: true))]
        for w in watchers { _ = try w.poll() }
        var times: [[Double]] = [[], [], []]
        for i in 0..<(3 * commits) {
            let k = i % 3
            let start = Timing.now
            try store.write { tx in try moveDate(of: reports.randomElement(using: &rng)!, in: tx) }
            guard try watchers[k].poll() != nil else { fatalError("no batch") }
            times[k].append(Timing.micros(since: start))
            for (j, w) in watchers.enumerated() where j != k { _ = try w.poll() }
        }
        for w in watchers { w.cancel() }

        // CPU per commit of the newest 50 messages with the common word.
        let window = store.watch(query(common), options: WatchOptions(window: WatchWindow(offset: 0, limit: 50)))
        _ = try window.poll()
        let watcherCPU = try ProcessCPU.microsPerCall(commits) {
            try store.write { tx in try moveDate(of: reports.randomElement(using: &rng)!, in: tx) }
            _ = try window.poll()
        }
        window.cancel()
        let grdbCommits = max(20, commits / 20)
        let queue = DispatchQueue(label: "grdb-observer")
        let changed = Signal()
        let observation = ValueObservation.tracking { db in try ftsRequest(common).fetchAll(db) }
            .start(in: pool, scheduling: .async(onQueue: queue), onError: { fatalError("\($0)") }, onChange: { _ in changed.signal() })
        guard changed.wait() else { fatalError("no initial value") }
        let grdbCPU = try ProcessCPU.microsPerCall(grdbCommits) {
            let id = reports.randomElement(using: &rng)!
            try pool.write { db in
                guard var m = try Message.fetchOne(db, key: id) else { return }
                m.date = m.date.addingTimeInterval(Double(Int.random(in: -86_400...86_400, using: &rng)))
                try m.update(db)
            }
            guard changed.wait() else { fatalError("no change notified") }
        }
        observation.cancel()
        try pool.close()

        func us(_ x: Double) -> String { x >= 10_000 ? Int(x).formatted() : String(format: "%.0f", x) }
        func ratio(_ x: Double) -> String { x >= 10 ? "\(Int(x).formatted())×" : String(format: "%.2f×", x) }
        let plain = Timing(samples: times[0]), word = Timing(samples: times[1]), prefix = Timing(samples: times[2])
        lines += [
            "",
            "| live list | Feedstore | against | ratio |",
            "|---|---:|---:|---:|",
            "| one-row commit → batch of the one-word watcher, p50 µs (against: the folder's index-range watcher) | \(us(word.p50)) | \(us(plain.p50)) | \(ratio(word.p50 / plain.p50)) |",
            "| one-row commit → batch of the one-word watcher, p99 µs (against: the folder's index-range watcher) | \(us(word.p99)) | \(us(plain.p99)) | \(ratio(word.p99 / plain.p99)) |",
            "| one-row commit → batch of the prefix watcher (\"rep\"), p50 µs (against: the folder's index-range watcher) | \(us(prefix.p50)) | \(us(plain.p50)) | \(ratio(prefix.p50 / plain.p50)) |",
            "| one-row commit → batch of the prefix watcher (\"rep\"), p99 µs (against: the folder's index-range watcher) | \(us(prefix.p99)) | \(us(plain.p99)) | \(ratio(prefix.p99 / plain.p99)) |",
            "| CPU per commit, newest 50 with \"\(common)\", µs (against: GRDB `ValueObservation` of the FTS5 query) | \(us(watcherCPU)) | \(us(grdbCPU)) | \(ratio(grdbCPU / watcherCPU)) |",
            "",
            "\(rows.formatted()) messages in one folder, \(counts.0.formatted()) with \"\(common)\" in their title, \(counts.1.formatted()) with \"\(rare)\"; \(commits.formatted()) commits per watcher (\(grdbCommits) for GRDB, which runs its query after each). GRDB: `synchronous = NORMAL`, an FTS5 table with external content kept by triggers, the query joined to `message` and sorted by date. Ratios: Feedstore's time over the other's for batches, the other's CPU over Feedstore's.",
        ]
        return lines
    }
}
