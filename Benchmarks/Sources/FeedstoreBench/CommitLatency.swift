import DemoFeed
@_spi(Benchmarking) import Feedstore
import Foundation

/// The latency of each durable one-row commit in a long run of them, one writer calling the
/// blocking `write` one commit after another: with LMDB's syncs, and through the commit log,
/// whose checkpoints sync LMDB's file inside a commit each time the log's records pass 64 MB or
/// the commits since the last one have written 128 MB of pages. The tail (p99.9, the longest, the commits over 10 ms) shows
/// what a checkpoint costs; the data file's size, what the pinned checkpoint costs in space.
struct CommitLatency {
    let directory: String
    let commits: Int
    /// Checkpoint bounds to run the commit log with, in MiB of pages written since the last
    /// checkpoint (``StoreOptions/commitLogCheckpointPages``); nil for the default alone.
    var checkpointMiB: [Int]? = nil

    struct Row {
        var writer: String
        /// Seconds of each commit, in order.
        var seconds: [Double]
        /// The size of the data file after the last commit.
        var fileBytes: Int
    }

    func run() throws -> [Row] {
        let loggedRuns: [(String, Bool, Int?)] = checkpointMiB.map { bounds in
            bounds.map { ("the commit log (durability full, keepsCommitLog), a checkpoint every \($0) MiB of pages", true, $0) }
        } ?? [("the commit log (durability full, keepsCommitLog)", true, nil)]
        return try ([("LMDB's syncs (durability full)", false, nil)] + loggedRuns).map { name, logged, checkpointMiB in
            var options = StoreOptions(durability: .full)
            options.keepsCommitLog = logged
            if let checkpointMiB { options.commitLogCheckpointPages = checkpointMiB << 20 }
            let path = directory + "/commit-latency-\(logged ? "logged" : "synced")"
            try? FileManager.default.removeItem(atPath: path)
            defer { try? FileManager.default.removeItem(atPath: path) }
            let store = try Store(path: path, entities: DemoFeed.entities, options: options)
            defer { store.close() }
            var feed = DemoFeed(seed: 8)
            try store.write { tx in for id in 1...1_000 { try tx.put(feed.contact(id: UInt64(id))) } }
            var seconds: [Double] = []
            seconds.reserveCapacity(commits)
            for id in 1...UInt64(commits) {
                let message = feed.message(id: id, contacts: 1_000)
                let start = DispatchTime.now().uptimeNanoseconds
                try store.write { tx in try tx.insert(message) }
                seconds.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            }
            let fileBytes = (try FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? NSNumber)?.intValue ?? 0
            return Row(writer: name, seconds: seconds, fileBytes: fileBytes)
        }
    }

    static func format(_ rows: [Row]) -> [String] {
        func percentile(_ sorted: [Double], _ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        var lines = ["| commits made durable by | commits | commits/s | p50 µs | p99 µs | p99.9 µs | longest ms | commits over 10 ms | data file MB |",
                     "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for row in rows {
            let sorted = row.seconds.sorted()
            let micro = [0.5, 0.99, 0.999].map { String(format: "%.0f", percentile(sorted, $0) * 1e6) }
            let perSecond = Int(Double(row.seconds.count) / row.seconds.reduce(0, +))
            lines.append("| \(row.writer) | \(row.seconds.count.formatted()) | \(perSecond.formatted()) | " + micro.joined(separator: " | ")
                + String(format: " | %.1f | ", sorted.last! * 1e3) + "\(sorted.filter { $0 > 0.010 }.count) | \(row.fileBytes >> 20) |")
        }
        return lines
    }
}
