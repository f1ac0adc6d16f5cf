import DemoFeed
import Feedstore
import Foundation
@_spi(Benchmarking) import FeedstoreJetStream

// Release build: swift run -c release --package-path Benchmarks feedstore-bench <command>
let arguments = CommandLine.arguments.dropFirst()
func option(_ name: String, default value: Int) -> Int {
    guard let i = arguments.firstIndex(of: name), arguments.index(after: i) < arguments.endIndex,
          let n = Int(arguments[arguments.index(after: i)]) else { return value }
    return n
}
func sizes(default value: [Int]) -> [Int] {
    arguments.firstIndex(of: "--sizes").map { arguments[arguments.index(after: $0)].split(separator: ",").compactMap { Int($0) } } ?? value
}
let quick = arguments.contains("--quick")
let scratch = NSTemporaryDirectory() + "feedstore-bench-\(getpid())"

/// Prints a line and keeps it for the results file.
nonisolated(unsafe) var report: [String] = []
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
    report.append(line)
}

func bulkInsert(rows: Int, durable: Bool, feedstoreOnly: Bool = false) throws {
    var bench = BulkInsert(rows: rows, batch: 1_000, directory: scratch, durable: durable)
    bench.feedstoreOnly = feedstoreOnly
    let r = try bench.run()
    func fmt(_ x: Double) -> String { Int(x).formatted() }
    func ratio(_ x: Double) -> String { String(format: "%.2f", r.feedstore / x) }
    let mode = durable ? "durable (fsync per commit)" : "not synced per commit"
    emit("\nBulk insert, \(rows.formatted()) rows, 1,000 per transaction, \(mode)\n")
    emit("| writer | rows/s | Feedstore ÷ writer |")
    emit("|---|---:|---:|")
    emit("| Feedstore (record + 2 counted indexes + journal), durability \(durable ? "full" : "none") | \(fmt(r.feedstore)) | 1.00 |")
    if feedstoreOnly { return }
    emit("| raw LMDB, same number of puts (1 per row) | \(fmt(r.rawSamePuts)) | \(ratio(r.rawSamePuts)) |")
    emit("| raw LMDB, 4 puts per row (8-byte random index keys) | \(fmt(r.rawAllPuts)) | \(ratio(r.rawAllPuts)) |")
    emit("| raw LMDB, Feedstore's exact puts (its 4 keys and values per row, replayed) | \(fmt(r.rawExactPuts)) | \(ratio(r.rawExactPuts)) |")
    emit("| GRDB record inserts, 2 indexes, synchronous = \(durable ? "FULL" : "NORMAL") | \(fmt(r.grdb)) | \(ratio(r.grdb)) |")
}

/// `commits`: commits each shape makes, shared among its writers (at least one each).
func durableCommits(writers: [Int], commits: Int) async throws {
    emit("\nDurable one-row commits per second (each writer waits for its commit; \(commits.formatted()) commits a shape, shared among its writers, a store keeping a commit log measured after its first checkpoint; raw LMDB, Feedstore's puts: each row's record, index entries, journal entry and one write of each index's counts as Feedstore wrote them, replayed one row per synced commit, in a tree each as Feedstore keeps them or all in one tree)\n")
    emit("| writers | Feedstore (.full, group commit) | rows per Feedstore commit (LMDB transaction) | GRDB (synchronous = FULL) | raw LMDB (synced commits) | Feedstore ÷ GRDB | Feedstore ÷ raw LMDB | raw LMDB, Feedstore's puts | Feedstore ÷ raw LMDB, its puts | raw LMDB, Feedstore's puts in one tree |")
    emit("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    var results: [DurableCommits.Result] = []
    for w in writers {
        let r = try await DurableCommits(directory: scratch, commitsPerWriter: max(1, commits / w)).run(writers: w)
        results.append(r)
        emit("| \(w) | \(Int(r.feedstore).formatted()) | " + String(format: "%.1f", r.rowsPerCommit) + " | \(Int(r.grdb).formatted()) | \(Int(r.rawLMDB).formatted()) | "
            + String(format: "%.1f | %.1f | ", r.feedstore / r.grdb, r.feedstore / r.rawLMDB)
            + "\(Int(r.rawFeedstorePuts).formatted()) | " + String(format: "%.2f | ", r.feedstore / r.rawFeedstorePuts) + "\(Int(r.rawFeedstorePutsOneTree).formatted()) |")
    }
    emit("\nBytes written per durable row (the process's write calls: LMDB's pages and meta pages; SQLite's WAL frames and checkpoints)\n")
    emit("| writers | Feedstore | GRDB | raw LMDB (one put) | raw LMDB, Feedstore's puts | raw LMDB, Feedstore's puts in one tree |")
    emit("|---:|---:|---:|---:|---:|---:|")
    for r in results { emit("| \(r.writers) | " + r.bytesPerRow.map { Int($0).formatted() }.joined(separator: " | ") + " |") }
    emit("\nRaw LMDB committing Feedstore's puts grouped as its group commit groups them (as many rows a synced commit as there are writers, committed by one thread), by layout, and made durable by a log of its own instead of LMDB's syncs (LMDB unsynced, the commit's puts appended to a log synced once a commit, LMDB synced once at the end): rows per second, and bytes written per row\n")
    emit("| writers | Feedstore (.full, group commit) | Feedstore, commit log | commit log ÷ GRDB | GRDB (synchronous = FULL) | raw LMDB, its puts, a tree each | raw LMDB, its puts, records, indexes and counts in one tree, journal apart | raw LMDB, its puts, one tree | raw LMDB unsynced, its puts, a tree each, a log synced | log synced ÷ GRDB | bytes per row, a tree each | bytes per row, journal apart | bytes per row, one tree | bytes per row, log synced |")
    emit("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results {
        emit("| \(r.writers) | \(Int(r.feedstore).formatted()) | \(Int(r.feedstoreLogged.rowsPerSecond).formatted()) | "
            + String(format: "%.1f", r.feedstoreLogged.rowsPerSecond / r.grdb) + " | \(Int(r.grdb).formatted()) | " + r.grouped.map { Int($0.rowsPerSecond).formatted() }.joined(separator: " | ")
            + " | \(Int(r.logged.rowsPerSecond).formatted()) | " + String(format: "%.1f", r.logged.rowsPerSecond / r.grdb)
            + " | " + r.grouped.map { Int($0.bytesPerRow).formatted() }.joined(separator: " | ") + " | \(Int(r.logged.bytesPerRow).formatted()) |")
    }
    emit("\nCommit logs ahead of LMDB: Feedstore's, against raw LMDB committing Feedstore's puts unsynced and appending them to a log synced once a commit (grouped as in the table above), without and with a reader keeping the snapshot the run starts from. A log replayed after a crash needs the pages of its checkpoint's snapshot, so it must keep them: LMDB then uses no page freed during the run again, and each commit writes new pages, as Feedstore's does between checkpoints. The last columns keep the snapshot with the puts in the layouts that share trees: the floor such a layout would give a log that can recover. Rows per second, and bytes written per row\n")
    emit("| writers | Feedstore, commit log | raw LMDB, a log synced | raw LMDB, a log synced, the snapshot kept | Feedstore ÷ the log | Feedstore ÷ the log, snapshot kept | bytes per row: Feedstore | the log | the log, snapshot kept | the snapshot kept, records, indexes and counts in one tree, journal apart | the snapshot kept, one tree | the snapshot kept, journal apart ÷ GRDB | bytes per row: the snapshot kept, journal apart | the snapshot kept, one tree |")
    emit("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results {
        let (f, l, k, shared) = (r.feedstoreLogged, r.logged, r.loggedKeepingSnapshot, r.loggedKeepingSnapshotShared)
        emit("| \(r.writers) | " + [f.rowsPerSecond, l.rowsPerSecond, k.rowsPerSecond].map { Int($0).formatted() }.joined(separator: " | ")
            + String(format: " | %.2f | %.2f | ", f.rowsPerSecond / l.rowsPerSecond, f.rowsPerSecond / k.rowsPerSecond)
            + [f.bytesPerRow, l.bytesPerRow, k.bytesPerRow].map { Int($0).formatted() }.joined(separator: " | ")
            + " | " + shared.map { Int($0.rowsPerSecond).formatted() }.joined(separator: " | ")
            + String(format: " | %.2f | ", (shared.first?.rowsPerSecond ?? 0) / r.grdb)
            + shared.map { Int($0.bytesPerRow).formatted() }.joined(separator: " | ") + " |")
    }
    emit("\nDurable one-row commits per second by the shape of the calls: writers as tasks awaiting the async `write`, or as threads of their own calling the blocking `write` (Feedstore runs a write, blocking or async, on the caller's thread when no other write is in the way and no group commit of several writers has just ended; otherwise it joins its writer thread's group commit)\n")
    emit("| writers | Feedstore, commit log: tasks | Feedstore, commit log: threads | Feedstore, LMDB's syncs: tasks | Feedstore, LMDB's syncs: threads | GRDB (synchronous = FULL): tasks | GRDB: threads | commit log ÷ GRDB, tasks | commit log ÷ GRDB, threads |")
    emit("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results {
        let s = r.shapes
        emit("| \(r.writers) | " + [s.loggedTasks, s.loggedThreads, s.syncedTasks, s.syncedThreads, s.grdbTasks, s.grdbThreads].map { Int($0).formatted() }.joined(separator: " | ")
            + String(format: " | %.2f | %.2f |", s.loggedTasks / s.grdbTasks, s.loggedThreads / s.grdbThreads))
    }
    if let pages = results.first(where: { $0.pages != nil })?.pages {
        emit("\nPages a durable one-row commit writes, by tree (one writer, mean of 20 commits after the timed ones, commit-pages.py)\n")
        emit("| tree | pages |")
        emit("|---|---:|")
        for (tree, count) in pages.sorted(by: { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }) {
            emit("| \(tree) | " + String(format: "%.2f", count) + " |")
        }
        emit("| (meta page) | 1.00 |")
        emit("| **total** | **" + String(format: "%.2f", pages.values.reduce(1, +)) + "** |")
    }
}

func watchPeers(sizes: [Int]) throws -> [WatchPeers.Row] {
    emit("\nA live list of one folder (WHERE folder = 1 ORDER BY date DESC), from the start of the writing transaction to the consumer holding the change\n")
    emit(WatchPeers.header)
    return try WatchPeers(sizes: sizes, directory: scratch).run { emit(WatchPeers.format($0)) }
}

func readPeers(size: Int) throws {
    emit("\nReads over byFolderDate at \(size.formatted()) messages, operations per second, medians of five passes taken in turns, each figure after an untimed round of the same reads (Feedstore decodes records; raw LMDB reads the same pages of Feedstore's files without decoding)\n")
    emit("| operation | Feedstore | raw LMDB | GRDB | Feedstore ÷ raw LMDB | Feedstore ÷ GRDB |")
    emit("|---|---:|---:|---:|---:|---:|")
    for r in try ReadPeers(size: size, directory: scratch).run() {
        func f(_ x: Double?) -> String { x.map { Int($0).formatted() } ?? "–" }
        func ratio(_ x: Double?) -> String {
            x.map { r.feedstore / $0 >= 10 ? "\(Int(r.feedstore / $0).formatted())×" : String(format: "%.2f", r.feedstore / $0) } ?? "–"
        }
        emit("| \(r.operation) | \(f(r.feedstore)) | \(f(r.rawLMDB)) | \(f(r.grdb)) | \(ratio(r.rawLMDB)) | \(ratio(r.grdb)) |")
    }
}

/// "<what>, <date>, <cores> cores, <memory> GiB, release build": the first line of a results file.
func runTitle(_ what: String) -> String {
    let host = ProcessInfo.processInfo
    return "\(what), \(ISO8601DateFormatter().string(from: Date()).prefix(10)), \(host.activeProcessorCount) cores, "
        + "\(host.physicalMemory / 1_073_741_824) GiB, release build\(quick ? " (--quick)" : "")"
}

/// Writes the collected report (and extra files) under Benchmarks/results.
func save(_ name: String, extra: [String: String] = [:]) throws {
    let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("results")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try (report.joined(separator: "\n") + "\n").write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
    for (file, text) in extra { try text.write(to: directory.appendingPathComponent(file), atomically: true, encoding: .utf8) }
    print("\nwritten to \(directory.path)/\(name)")
}

switch arguments.first {
case "bulk-insert":
    try bulkInsert(rows: option("--rows", default: 1_000_000), durable: arguments.contains("--durable"),
                   feedstoreOnly: arguments.contains("--only-feedstore"))
case "commits":
    // `--writers 1,16` for some writer counts only.
    let writers = arguments.firstIndex(of: "--writers").map { arguments[arguments.index(after: $0)].split(separator: ",").compactMap { Int($0) } }
    // 16,000 commits a shape: at one writer, several of the commit log's checkpoints.
    try await durableCommits(writers: writers ?? [1, 2, 4, 8, 16], commits: option("--commits", default: 16_000))
case "read-peers":
    try readPeers(size: option("--rows", default: 1_000_000))
case "filtered-watch":
    // A live search over one folder against the unfiltered list, a re-fetch per commit and GRDB; saves Benchmarks/results/filtered-watch.md.
    let rows = option("--rows", default: quick ? 100_000 : 1_000_000)
    let bench = FilteredWatch(rows: rows, directory: scratch, commits: option("--commits", default: quick ? 300 : 2_000))
    emit("\(runTitle("A filtered live list")): `Query(Message.byFolderDate, prefix: 1).filter(.contains(\\.title, \"INVOICE\", caseInsensitive: true))` over \(rows.formatted()) messages, all in folder 1, durability none (GRDB `synchronous = NORMAL`)\n")
    for line in try bench.run() { emit(line) }
    try save(quick ? "filtered-watch-quick.md" : "filtered-watch.md")
case "text-search":
    // Words of titles over a million messages against GRDB with FTS5; saves Benchmarks/results/text-search.md.
    let rows = option("--rows", default: quick ? 100_000 : 1_000_000)
    let bench = TextSearchBench(rows: rows, directory: scratch, commits: option("--commits", default: quick ? 300 : 2_000))
    emit("\(runTitle("Text search")): a text index over `title` (`textIndex(\\.title, order: \\.date.descending)`) of \(rows.formatted()) messages, all in folder 1, durability none (GRDB `synchronous = NORMAL`)\n")
    for line in try bench.run() { emit(line) }
    try save(quick ? "text-search-quick.md" : "text-search.md")
case "watch-peers":
    _ = try watchPeers(sizes: sizes(default: [10_000, 100_000, 1_000_000]))
case "peers":
    // Everything measured against the peers in one run; `--quick` for a smoke run.
    let host = ProcessInfo.processInfo
    emit("Feedstore against its peers, \(ISO8601DateFormatter().string(from: Date()).prefix(10)), \(host.activeProcessorCount) cores, "
        + "\(host.physicalMemory / 1_073_741_824) GiB, release build\(quick ? " (--quick)" : "")")
    try bulkInsert(rows: quick ? 20_000 : 200_000, durable: false)
    try bulkInsert(rows: quick ? 5_000 : 50_000, durable: true)
    try await durableCommits(writers: quick ? [1, 16] : [1, 2, 4, 8, 16], commits: quick ? 320 : 16_000)
    try readPeers(size: quick ? 20_000 : 1_000_000)
    let rows = try watchPeers(sizes: quick ? [10_000, 30_000] : sizes(default: [10_000, 100_000, 1_000_000, 10_000_000]))
    try save(quick ? "peers-quick.md" : "peers.md", extra: [quick ? "watch-peers-quick.csv" : "watch-peers.csv": WatchPeers.csv(rows)])
case "counts":
    let bench = CountedIndexBench(sizes: sizes(default: [10_000, 100_000, 1_000_000, 10_000_000]),
                                  directory: NSTemporaryDirectory() + "feedstore-counts-\(getpid())")
    emit("\(runTitle("Counted index")), one random Int64 key per record, durability none, 100,000 random operations per size\n")
    print(CountedIndexBench.header)
    let rows = try bench.run(uncountedUpTo: option("--uncounted-up-to", default: 10_000_000))
    report.append(CountedIndexBench.header)
    report.append(contentsOf: rows.map(CountedIndexBench.format))
    try save("counts.md")
case "commit-pages":
    let bench = CommitPages(sizes: sizes(default: [10_000, 1_000_000]), directory: NSTemporaryDirectory() + "feedstore-pages-\(getpid())",
                            updates: option("--updates", default: 50))
    emit("\(runTitle("Pages a one-row update writes, by tree")): mean of \(bench.updates) updates, demo feed, durability none\n")
    for line in CommitPages.format(try bench.run()) { emit(line) }
    try save("commit-pages.md")
case "after-load":
    // One-row commits right after a bulk load, with the default journal retention; saves Benchmarks/results/after-load.md.
    let bench = AfterLoad(sizes: sizes(default: [1_000_000, 10_000_000]), directory: scratch, commits: option("--commits", default: 6_000))
    emit("\(runTitle("One-row commits after a bulk load")): the demo feed loaded 5,000 messages a commit, durability none, default journal retention; one watcher of byFolderDate\n")
    for line in AfterLoad.format(try bench.run()) { emit(line) }
    try save("after-load.md")
case "commit-latency":
    // Each durable one-row commit of a long run timed, with LMDB's syncs and through the commit log; saves Benchmarks/results/commit-latency.md.
    let commits = option("--commits", default: 100_000)
    emit("\(runTitle("Durable commit latency")): one-row commits of the demo feed one after another, \(commits.formatted()) each way, one writer calling the blocking `write`; each commit timed\n")
    // `--checkpoint-mib 128,16`: the commit log with each of these checkpoint bounds.
    let bounds = arguments.firstIndex(of: "--checkpoint-mib").map { arguments[$0 + 1].split(separator: ",").compactMap { Int($0) } }
    for line in CommitLatency.format(try CommitLatency(directory: scratch, commits: commits, checkpointMiB: bounds).run()) { emit(line) }
    try save("commit-latency.md")
case "bulk-load":
    // The demo feed loaded with each durability and transaction size; saves Benchmarks/results/bulk-load.md.
    let messages = option("--messages", default: 1_000_000)
    emit("\(runTitle("Bulk load")): the demo feed, \(messages.formatted()) messages and 1,000 contacts, into a new store\n")
    for line in try BulkLoad(messages: messages, directory: scratch).run() { emit(line) }
    try save("bulk-load.md")
case "lookup-instructions":
    // Used by Benchmarks/lookup-instructions, which runs it under callgrind.
    let bench = LookupInstructions(size: option("--size", default: 10_000), path: arguments.last!, operations: option("--operations", default: 10_000))
    if arguments.contains("--build") {
        try bench.build()
    } else {
        try bench.run(LookupInstructions.Lookup(rawValue: arguments.dropFirst().first ?? "") ?? .entry)
    }
case "batch-instructions":
    // Used by Benchmarks/batch-instructions, which runs it under callgrind: `--build` writes the
    // demo feed; otherwise one watcher of `--shape`, `--commits` one-row commits, a batch each.
    let bench = BatchInstructions(path: arguments.last!, size: option("--size", default: 100_000))
    if arguments.contains("--build") {
        try bench.build()
    } else {
        let shape = arguments.firstIndex(of: "--shape").flatMap { BatchInstructions.Shape(rawValue: arguments[$0 + 1]) } ?? .plain
        try bench.run(shape, commits: option("--commits", default: 100))
    }
case "decode":
    // Typed reads for instruction counts (run under callgrind): `--build` writes the demo feed;
    // otherwise `--rounds` times: every message through objects(in:) (`--mode scan`), 2,000
    // records by position (`at`) or 200 windows of 100 (`window`), at seeded positions, into
    // Message (StoredFieldsDecodable) or, with `--codable`, CodableMessage (Codable).
    let path = arguments.last!
    if arguments.contains("--build") {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
        var feed = DemoFeed(seed: 1)
        try feed.populate(store, messages: option("--size", default: 100_000), contacts: 1_000, batch: 10_000)
        store.close()
    } else {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(readOnly: true))
        let mode = arguments.firstIndex(of: "--mode").map { arguments[$0 + 1] } ?? "scan"
        func decodeRounds<E: Entity>(_ type: E.Type) throws -> Int {
            let everything = Query(E.self, index: "byFolderDate")
            var decoded = 0
            for _ in 0..<option("--rounds", default: 1) {
                var rng = SplitMix(state: 9)
                decoded += try store.read { tx in
                    let count = try tx.count(everything)
                    switch mode {
                    case "at": return try (0..<2_000).reduce(0) { n, _ in n + (try tx.object(at: Int.random(in: 0..<count, using: &rng), in: everything) == nil ? 0 : 1) }
                    case "window": return try (0..<200).reduce(0) { n, _ in n + (try tx.objects(in: everything, offset: Int.random(in: 0..<count - 100, using: &rng), limit: 100).count) }
                    default: return try tx.objects(in: everything).count
                    }
                }
            }
            return decoded
        }
        let decoded = arguments.contains("--codable") ? try decodeRounds(CodableMessage.self) : try decodeRounds(Message.self)
        print("decoded \(decoded) messages")
    }
case "shapes":
    // Every watcher shape and many watchers, ratios within one run; saves Benchmarks/results/watch-shapes.md.
    let host = ProcessInfo.processInfo
    emit("Watcher shapes, \(ISO8601DateFormatter().string(from: Date()).prefix(10)), \(host.activeProcessorCount) cores, release build, durability none\(quick ? " (--quick)" : "")")
    emit("\nOne-row update of a row every watcher shows (its date moves), start of commit → batch in the consumer's hands; shapes take turns in rounds of \(WatchShapes.round)\n")
    emit(WatchShapes.header)
    let shapes = WatchShapes(sizes: sizes(default: quick ? [10_000] : [10_000, 100_000, 1_000_000, 10_000_000]),
                             directory: scratch, updates: option("--updates", default: quick ? 100 : 500))
    var shapeRows: [WatchShapes.Row] = []
    try await shapes.run { row in
        shapeRows.append(row)
        FileHandle.standardOutput.write(Data((WatchShapes.format(shapeRows).last! + "\n").utf8))
    }
    report.append(contentsOf: WatchShapes.format(shapeRows))
    emit("")
    for line in WatchShapes.deliverySummary(shapeRows) { emit(line) }
    let fanOut = WatcherFanOut(messages: quick ? 20_000 : 200_000, contacts: 10_000, directory: scratch, commits: quick ? 300 : 2_000,
                               idleWatchers: quick ? 10_000 : 100_000)
    emit("\nW watchers on distinct ranges (one contact's messages each, \(fanOut.messages.formatted()) messages), each iterated by its own task; one-row commits to the first watcher's range only\n")
    emit(WatcherFanOut.header)
    var fanRows: [WatcherFanOut.Row] = []
    let idle = try fanOut.run(counts: quick ? [1, 100, 1_000] : [1, 100, 1_000, 10_000]) { row in
        fanRows.append(row)
        FileHandle.standardOutput.write(Data((WatcherFanOut.format(fanRows).last! + "\n").utf8))
    }
    report.append(contentsOf: WatcherFanOut.format(fanRows))
    emit("\nIdle watchers attached (initial batch taken, ranges no commit touches): one-row commit throughput, median of five rounds of \(fanOut.commits.formatted()) commits\n")
    for line in WatcherFanOut.format(idle) { emit(line) }
    emit("\nTargets in this run\n")
    for line in WatchShapes.targets(shapes: shapeRows, fanOut: fanRows, idle: idle) { emit(line) }
    try save(quick ? "watch-shapes-quick.md" : "watch-shapes.md")
case "idle":
    // Only the idle-watchers part of `shapes`: one-row commit throughput with --count watchers attached.
    let fanOut = WatcherFanOut(messages: option("--messages", default: 200_000), contacts: 10_000, directory: scratch, commits: option("--commits", default: 2_000),
                               idleWatchers: option("--count", default: 100_000))
    for line in WatcherFanOut.format(try fanOut.run(counts: []) { _ in }) { print(line) }
case "scroll":
    // A lazy list scrolled while a writer commits, against GRDB's LIMIT/OFFSET; saves Benchmarks/results/scroll.md.
    let bench = LazyListScroll(sizes: sizes(default: quick ? [10_000, 100_000] : [10_000, 100_000, 1_000_000, 10_000_000]),
                               directory: scratch, grdbUpTo: option("--grdb-up-to", default: 1_000_000))
    emit("\(runTitle("Scrolling a lazy list")): every message by byFolderDate, sectioned by folder; \(bench.screens) screens of \(LazyListScroll.screenRows) rows flung through in order, then \(bench.screens) at random positions, while another thread commits a one-row change every 2 ms\n")
    print(LazyListScroll.header)
    let rows = try await bench.run { FileHandle.standardOutput.write(Data((LazyListScroll.format($0) + "\n").utf8)) }
    report.append(LazyListScroll.header)
    report.append(contentsOf: rows.map(LazyListScroll.format))
    try save(quick ? "scroll-quick.md" : "scroll.md")
case "jetstream":
    // Shipping to a JetStream stream on loopback and following it into a replica; saves Benchmarks/results/jetstream.md.
    let bench = JetStreamShipping(directory: scratch, oneRowCommits: option("--commits", default: quick ? 2_000 : 50_000),
                                  bulkCommits: option("--bulk-commits", default: quick ? 5 : 50), latencySamples: option("--samples", default: quick ? 200 : 2_000))
    emit("\(runTitle("JetStream shipping and replicas")): a nats-server -js on loopback (file storage) started by the run; the demo feed; primary durability none, replica relaxed\n")
    let (rates, latencies) = try bench.run()
    for line in JetStreamShipping.format(rates: rates, latencies: latencies) { emit(line) }
    let takeover = try JetStreamTakeover(directory: scratch, messages: option("--messages", default: quick ? 100_000 : 1_000_000)).run()
    for line in JetStreamTakeover.format(takeover) { emit(line) }
    // Forwarded writes with the primary syncing through LMDB, then through its commit log.
    for commitLog in [false, true] {
        let forwarded = try JetStreamForwardedWrites(directory: scratch + (commitLog ? "/forwarded-logged" : "/forwarded"),
                                                     samples: option("--samples", default: quick ? 200 : 2_000),
                                                     seconds: quick ? 3 : 10, commitLog: commitLog).run()
        for line in JetStreamForwardedWrites.format(forwarded) { emit(line) }
    }
    try save(quick ? "jetstream-quick.md" : "jetstream.md")
case "forwarded-writes":
    // Forwarded writes alone (part of jetstream); prints its tables, saves nothing.
    let forwarded = try JetStreamForwardedWrites(directory: scratch, samples: option("--samples", default: quick ? 200 : 2_000),
                                                 seconds: Double(option("--seconds", default: quick ? 3 : 10)), replicas: option("--replicas", default: 3),
                                                 commitLog: arguments.contains("--commit-log")).run()
    for line in JetStreamForwardedWrites.format(forwarded) { print(line) }
case "inserts":
    // One-row typed inserts of demo messages, `--per-commit K` requests sharing each commit as
    // group commit shares them (`Store.writeEach`), durability none: the writer thread's work per
    // row, for callgrind (`--rows N PATH`, a new store).
    let path = arguments.last!
    // `--commit-log`: durability full through the commit log instead (each commit synced).
    var options = StoreOptions(durability: arguments.contains("--commit-log") ? .full : .none)
    options.keepsCommitLog = arguments.contains("--commit-log")
    let store = try Store(path: path, entities: DemoFeed.entities, options: options)
    let perCommit = option("--per-commit", default: 16)
    var feed = DemoFeed(seed: 5)
    try store.write { tx in for id in 1...1_000 { try tx.put(feed.contact(id: UInt64(id))) } }
    let messages = (1...UInt64(option("--rows", default: 16_000))).map { feed.message(id: $0, contacts: 1_000) }
    for start in stride(from: 0, to: messages.count, by: perCommit) {
        let bodies = messages[start..<min(messages.count, start + perCommit)].map { m in { (tx: WriteTransaction) throws -> Void in try tx.insert(m) } }
        for outcome in try store.writeEach(bodies) { try outcome.get() }
    }
    store.close()
case "envelopes":
    // Reads and encodes every commit of a store as the shipper does, without a server (for
    // callgrind): `--build --commits N PATH` makes N one-row commits (`--rows-per-commit K`:
    // K rows each); `--decode` also reads each envelope back as a replica does, `--apply
    // REPLICA` also applies it to a store.
    let path = arguments.last!
    if arguments.contains("--build") {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
        _ = try store.write { try $0.keepRecordImagesInJournal() }
        var feed = DemoFeed(seed: 3)
        let perCommit = UInt64(option("--rows-per-commit", default: 1))
        for commit in 0..<UInt64(option("--commits", default: 2_000)) {
            try store.write { tx in for id in (commit * perCommit + 1)...(commit * perCommit + perCommit) { try tx.put(feed.message(id: id, contacts: 100)) } }
        }
        store.close()
    } else {
        let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(readOnly: true))
        var bytes = 0, entries = 0
        let decoding = arguments.contains("--decode")
        // `--apply REPLICA`: each envelope applied to a store at REPLICA as a replica applies it.
        let replica = try arguments.firstIndex(of: "--apply").map {
            try Store(path: arguments[$0 + 1], entities: DemoFeed.entities, options: StoreOptions(durability: .none))
        }
        defer { replica?.close() }
        for _ in 0..<option("--rounds", default: 1) {
            bytes += try JetStreamShipping.encodeJournal(of: store, after: try store.read { try $0.journalBounds().first } - 1, store: UUID()) { envelope in
                // As a replica reads them: `--decode` also decodes each envelope.
                if decoding { entries += try ChangeEnvelope.entryCount(decoding: envelope) }
                if let replica {
                    let records = try ChangeEnvelope.records(decoding: envelope)
                    try replica.write { tx in
                        for record in records { try tx.applyReplicated(record) }
                    }
                }
            }
        }
        print("encoded \(bytes) bytes" + (decoding ? ", decoded \(entries) entries" : ""))
    }
case "wakeups":
    // What waiting costs (wake-ups of 100 idle watchers) and another process's commits reaching a watcher.
    let size = option("--size", default: quick ? 100_000 : 1_000_000)
    let bench = CrossProcessWatch(size: size, directory: scratch, commits: option("--commits", default: quick ? 200 : 1_000),
                                  executable: CommandLine.arguments[0])
    emit("\(runTitle("Waiting and other processes' commits")): the demo feed's byFolderDate index, durability none\n")
    for line in CrossProcessWatch.format(try bench.run(), size: size) { emit(line) }
    try save(quick ? "wakeups-quick.md" : "wakeups.md")
case "commit-child":
    try CrossProcessWatch.child(path: String(arguments.dropFirst().first ?? ""))
case "watch":
    let bench = WatcherBench(sizes: sizes(default: [10_000, 100_000, 1_000_000, 10_000_000]),
                             directory: NSTemporaryDirectory() + "feedstore-watch-\(getpid())")
    emit("\(runTitle("Watchers")): the demo feed's byFolderDate index over all messages, durability none, 2,000 one-row updates per size\n")
    print(WatcherBench.header)
    let rows = try bench.run()
    report.append(WatcherBench.header)
    report.append(contentsOf: rows.map(WatcherBench.format))
    try save("watch.md")
case "live-server":
    // A server of the live benchmark (`live` starts it): see LiveBenchServer.
    func value(_ name: String) -> String { arguments.firstIndex(of: name).map { arguments[$0 + 1] } ?? "" }
    try await LiveBenchServer.run(kind: value("--kind"), store: value("--store"), sqlite: value("--sqlite"))
case "live-load":
    // The clients of the live benchmark (`live` starts them): see LiveLoad.
    let kind = arguments.firstIndex(of: "--kind").map { arguments[$0 + 1] } ?? "feedstore"
    try await LiveLoad.run(port: option("--port", default: 0), connections: option("--connections", default: 1), kind: kind)
case "live":
    let contacts = quick ? 1_000 : 10_000
    let bench = LiveBench(directory: NSTemporaryDirectory() + "feedstore-live-bench-\(quick ? "quick" : "full")",
                          messages: quick ? 100_000 : 1_000_000, connections: sizes(default: quick ? [100, 1_000] : [100, 1_000, 10_000]),
                          commits: option("--commits", default: quick ? 300 : 2_000), rate: 100)
    print("preparing \(bench.messages.formatted()) messages in a store and in SQLite (kept for later runs)…")
    try bench.prepare(contacts: contacts)
    emit("\(runTitle("Live lists over WebSocket")): \(bench.messages.formatted()) messages of \(contacts.formatted()) contacts; each connection holds the newest 50 messages of its own contact (`byContact`, prefix `[contact]`, reversed); the server's writer makes \(bench.commits.formatted()) one-row commits at 100 a second (durability none; GRDB `synchronous = NORMAL`), each a new message of one watched contact. Server and clients in separate processes on loopback\n")
    emit(LiveBench.header.joined(separator: "\n"))
    let rows = try bench.run(kinds: ["echo", "feedstore", "grdb"], peerUpTo: option("--peer-up-to", default: 10_000)) { emit(LiveBench.format($0)) }
    let legConnections = min(1_000, bench.connections.max() ?? 1_000)
    let legs = try await LiveLegs.run(store: bench.storePath, connections: legConnections, commits: quick ? 300 : 1_000,
                                      firstID: UInt64(Date().timeIntervalSince1970) * 1_000_000 + 500_000)
    emit("\nWhere the time goes, \(legConnections.formatted()) connections: the same subscriptions in one process (no socket), one commit at a time, held by bare watchers, then by `LiveConnection`s; the socket leg is the WebSocket run's latency less the frame's\n")
    emit(LiveBench.legs(legs, rows: rows, connections: legConnections).joined(separator: "\n"))
    emit("\n" + LiveBench.targets(rows).joined(separator: "\n"))
    // `--storectl PATH` (Benchmarks/run live gives it): the demo page in a real browser.
    if let storectl = arguments.firstIndex(of: "--storectl").map({ arguments[$0 + 1] }) {
        emit(try LiveBench.browser(storectl: storectl, store: bench.storePath).joined(separator: "\n"))
    }
    try save(quick ? "live-quick.md" : "live.md", extra: [quick ? "live-quick.csv" : "live.csv": LiveBench.csv(rows)])
default:
    print("""
        usage: feedstore-bench <command>
          peers [--quick] [--sizes …]     writes, durable commits and live lists against GRDB and raw LMDB; saves Benchmarks/results/
          bulk-insert [--rows N] [--durable] [--only-feedstore]
          commits [--commits N] [--writers 1,16]
                                          durable one-row commits, 1, 2, 4, 8 and 16 writers
          batch-instructions [--build] [--shape plain|windowed-sectioned|indexes-windowed] [--commits N] [--size N] PATH
                                          one-row commits and batches of one watcher, for callgrind (Benchmarks/batch-instructions)
          read-peers [--rows N]           positional reads, windows, counts and scans against raw LMDB and GRDB
          filtered-watch [--rows N] [--commits N] [--quick]
          text-search [--rows N] [--commits N] [--quick]
                                          a live search over one folder against the unfiltered list, a re-fetch per commit and GRDB
          watch-peers [--sizes …]         live-list latency: Feedstore watcher, refetch + diff, GRDB ValueObservation
          counts [--sizes …] [--uncounted-up-to N]
                                          counted-index lookups and inserts; saves Benchmarks/results/counts.md
          watch [--sizes …]               Feedstore watchers from 10 thousand to 10 million rows; saves …/watch.md
          bulk-load [--messages N]        the demo feed loaded with each durability and transaction size; saves …/bulk-load.md
          after-load [--sizes …] [--commits N]
                                          one-row commits right after a bulk load, in spans; saves …/after-load.md
          shapes [--quick] [--sizes …] [--updates N]
                                          every watcher shape (windows, sections, indexes-only, blocking, async) and
                                          many watchers (up to 10,000 busy, 100,000 idle); saves Benchmarks/results/
          commit-latency [--commits N] [--checkpoint-mib A,B]
                                          each durable one-row commit of a long run timed, with LMDB's syncs and
                                          through the commit log (its checkpoints in the tail); saves …/commit-latency.md
          commit-pages [--sizes …] [--updates K]
                                          pages a one-row update writes, by tree (runs Benchmarks/commit-pages.py); saves …/commit-pages.md
          scroll [--quick] [--sizes …] [--grdb-up-to N]
                                          a lazy list scrolled (flings and jumps) while a writer commits, against
                                          GRDB's LIMIT/OFFSET; saves Benchmarks/results/scroll.md
          live [--quick] [--sizes 100,1000,10000] [--commits N] [--peer-up-to N] [--storectl PATH]
                                          live lists over WebSocket: a server process and N clients on loopback, Feedstore
                                          against GRDB ValueObservation and a bare echo server; saves …/live.md
          jetstream [--quick] [--commits N] [--bulk-commits N] [--samples N] [--messages N]
                                          a journal shipped to JetStream on loopback and followed into a replica:
                                          commits/s, rows/s, commit → replica batch latency, forwarded writes; saves …/jetstream.md
          forwarded-writes [--quick] [--samples N] [--seconds S] [--replicas N] [--commit-log]
                                          forwarded writes alone: latency by leg and 16-writer throughput (prints only)
          decode [--build --size N | --rounds R --mode scan|at|window] PATH
                                          typed reads of every message, for callgrind
          inserts [--rows N] [--per-commit K] PATH
                                          one-row typed inserts, K requests a commit as group commit makes them,
                                          durability none, into a new store at PATH: the writer's work per row, for callgrind
          lookup-instructions (--build | entry | rank | count | named-query | typed-query) --size N [--operations K] PATH
                                          one kind of counted lookup, for Benchmarks/lookup-instructions
        """)
}
