import Feedstore
import DemoFeed
import Foundation

/// Which trees a one-row update writes pages in: the demo feed at each size, then one-row
/// updates like `watch`'s (a random message's date moves), each followed by `commit-pages.py`,
/// which compares the store's last two snapshots. Pages are what a small commit's time goes to:
/// LMDB writes each one (or each run of adjacent ones) with its own call.
struct CommitPages {
    let sizes: [Int]
    let directory: String
    var updates = 50

    /// Mean pages per commit, by tree, for each size.
    func run() throws -> [(size: Int, pages: [String: Double])] {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("commit-pages.py").path
        var results: [(Int, [String: Double])] = []
        for size in sizes {
            let path = directory + "/pages-\(size)"
            let store = try WatcherBench.populatedStore(at: path, size: size)
            var rng = SplitMix(state: UInt64(size))
            var totals: [String: Double] = [:]
            for _ in 0..<updates {
                try WatcherBench.moveDate(of: UInt64.random(in: 1...UInt64(size), using: &rng), in: store, using: &rng)
                for (tree, pages) in try Self.lastCommitPages(script: script, dataFile: path + "/data.mdb") {
                    totals[tree, default: 0] += Double(pages) / Double(updates)
                }
            }
            store.close()
            try? FileManager.default.removeItem(atPath: path)
            results.append((size, totals))
        }
        return results
    }

    static func lastCommitPages(script: String, dataFile: String) throws -> [String: Int] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, dataFile]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let pages = try JSONSerialization.jsonObject(with: data) as? [String: Int] else {
            throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedDescriptionKey: "commit-pages.py failed on \(dataFile)"])
        }
        return pages
    }

    /// A Markdown table: one row per tree, one column per size, plus the meta page and the total.
    static func format(_ results: [(size: Int, pages: [String: Double])]) -> [String] {
        let trees = Set(results.flatMap(\.pages.keys)).sorted { a, b in
            let (x, y) = (results.last!.pages[a] ?? 0, results.last!.pages[b] ?? 0)
            return x != y ? x > y : a < b
        }
        func cell(_ x: Double) -> String { String(format: "%.2f", x) }
        var lines = ["| tree | " + results.map { "\($0.size.formatted()) rows" }.joined(separator: " | ") + " |",
                     "|---|" + String(repeating: "---:|", count: results.count)]
        for tree in trees { lines.append("| \(tree) | " + results.map { cell($0.pages[tree] ?? 0) }.joined(separator: " | ") + " |") }
        lines.append("| (meta page) | " + results.map { _ in "1.00" }.joined(separator: " | ") + " |")
        lines.append("| **total** | " + results.map { "**\(cell($0.pages.values.reduce(1, +)))**" }.joined(separator: " | ") + " |")
        return lines
    }
}
