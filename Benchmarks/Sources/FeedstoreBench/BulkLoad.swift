import DemoFeed
import Feedstore
import Foundation

/// Loads the demo feed into a new store with each durability and transaction size, as an
/// application's first run or an import would: what the bulk-loading article recommends is
/// measured here, against the alternatives.
struct BulkLoad {
    var messages: Int
    var directory: String

    /// Durability and records per transaction, the recommended way first.
    static let ways: [(Durability, Int)] = [(.none, 10_000), (.none, 1_000), (.none, 50_000), (.relaxed, 10_000), (.full, 10_000), (.relaxed, 1_000)]

    func run() throws -> [String] {
        var lines = ["| durability | records per transaction | seconds (sync at the end included) | messages/s | time ÷ the first |",
                     "|---|---:|---:|---:|---:|"]
        var first: Double?
        for (durability, batch) in Self.ways {
            let path = directory + "/bulk-\(durability.rawValue)-\(batch)"
            try? FileManager.default.removeItem(atPath: path)
            let start = Date()
            var feed = DemoFeed(seed: 1)
            try feed.load(into: path, messages: messages, contacts: 1_000, durability: durability, batch: batch)
            let seconds = Date().timeIntervalSince(start)
            try? FileManager.default.removeItem(atPath: path)
            first = first ?? seconds
            lines.append("| \(durability.rawValue) | \(batch.formatted()) | \(String(format: "%.1f", seconds)) | "
                + "\(Int(Double(messages) / seconds).formatted()) | \(String(format: "%.2f", seconds / first!)) |")
            FileHandle.standardOutput.write(Data((lines.last! + "\n").utf8))
        }
        return lines
    }
}
