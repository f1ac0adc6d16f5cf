import Foundation

// feedstore-bench bulk-insert [--rows N]
// Release build: swift run -c release --package-path Benchmarks feedstore-bench bulk-insert
let arguments = CommandLine.arguments.dropFirst()
func option(_ name: String, default value: Int) -> Int {
    guard let i = arguments.firstIndex(of: name), arguments.index(after: i) < arguments.endIndex,
          let n = Int(arguments[arguments.index(after: i)]) else { return value }
    return n
}

switch arguments.first {
case "bulk-insert":
    let rows = option("--rows", default: 1_000_000)
    var bench = BulkInsert(rows: rows, batch: 1_000, directory: NSTemporaryDirectory() + "feedstore-bench-\(getpid())")
    bench.feedstoreOnly = arguments.contains("--only-feedstore")
    let r = try bench.run()
    func fmt(_ x: Double) -> String { Int(x).formatted() }
    print("bulk insert, \(rows.formatted()) rows, 1,000 per transaction, durability none")
    print("| writer | rows/s | Feedstore / writer |")
    print("|---|---:|---:|")
    print("| Feedstore (record + 2 indexes + journal) | \(fmt(r.feedstore)) | 1.00 |")
    if bench.feedstoreOnly { break }
    print("| raw LMDB, same number of puts (1 per row) | \(fmt(r.rawSamePuts)) | \(String(format: "%.2f", r.feedstore / r.rawSamePuts)) |")
    print("| raw LMDB, Feedstore's physical puts (4 per row) | \(fmt(r.rawAllPuts)) | \(String(format: "%.2f", r.feedstore / r.rawAllPuts)) |")
case "counts":
    let sizes = arguments.firstIndex(of: "--sizes").map { arguments[arguments.index(after: $0)].split(separator: ",").compactMap { Int($0) } }
        ?? [10_000, 100_000, 1_000_000, 10_000_000]
    let bench = CountedIndexBench(sizes: sizes, directory: NSTemporaryDirectory() + "feedstore-counts-\(getpid())")
    print("counted index, one random Int64 key per record, durability none, 100,000 random operations per size")
    print(CountedIndexBench.header)
    _ = try bench.run(uncountedUpTo: option("--uncounted-up-to", default: 10_000_000))
case "watch":
    let sizes = arguments.firstIndex(of: "--sizes").map { arguments[arguments.index(after: $0)].split(separator: ",").compactMap { Int($0) } }
        ?? [10_000, 100_000, 1_000_000, 10_000_000]
    let bench = WatcherBench(sizes: sizes, directory: NSTemporaryDirectory() + "feedstore-watch-\(getpid())")
    print("watcher over the demo feed's byFolderDate index (all messages), durability none, 2,000 one-row updates per size")
    print(WatcherBench.header)
    _ = try bench.run()
default:
    print("usage: feedstore-bench bulk-insert [--rows N] | counts [--sizes …] [--uncounted-up-to N] | watch [--sizes …]")
}
