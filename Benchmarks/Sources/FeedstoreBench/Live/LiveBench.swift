import DemoFeed
import Feedstore
import Foundation

/// Live lists over WebSocket on loopback: a server process (`live-server`) and a client
/// process (`live-load`) with N connections, each holding a 50-row window of its own contact's
/// messages (`byContact`, newest first) of a store of `messages` messages, while the server's
/// writer makes one-row commits at `rate` a second, each a new message of one watched contact:
/// one client's window changes per commit. For each server kind and N: the server's memory per
/// connection (subscription included), its CPU per commit (above its idle CPU), and the time
/// from the start of each commit's write call until the affected client has read the batch.
struct LiveBench {
    let directory: String
    var messages: Int
    var connections: [Int]
    var commits: Int
    var rate: Double
    /// GRDB makes each commit cost a query per connection: it gets fewer commits, so that a run
    /// ends (at least 20, `peerWork / N`).
    var peerWork = 200_000

    struct Row {
        var kind: String
        var connections: Int
        var connectSeconds: Double
        var anonymousPerConnection: Double
        var residentPerConnection: Double
        var idleCPU: Double
        var commits = 0
        var cpuPerCommit: Double?
        var latency: Timing?
        var writeCall: Timing?
    }

    var storePath: String { directory + "/feedstore" }
    var sqlitePath: String { directory + "/grdb/messages.sqlite" }

    /// The store and its SQLite copy, made once and kept for the runs.
    func prepare(contacts: Int) throws {
        guard !FileManager.default.fileExists(atPath: sqlitePath) else { return }
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var feed = DemoFeed(seed: 11)
        try feed.load(into: storePath, messages: messages, contacts: contacts)
        let store = try Store(path: storePath, entities: DemoFeed.entities, options: StoreOptions(readOnly: true))
        defer { store.close() }
        let pool = try GRDBPeer.open(sqlitePath, durable: false)
        try GRDBPeer.copyMessages(from: store, to: pool)
    }

    func run(kinds: [String], peerUpTo: Int, report: (Row) -> Void) throws -> [Row] {
        var rows: [Row] = []
        // New messages get ids no earlier run used (the store is kept from run to run).
        var nextID = UInt64(Date().timeIntervalSince1970) * 1_000_000
        for n in connections {
            for kind in kinds where kind != "grdb" || n <= peerUpTo {
                let commits = kind == "echo" ? 0 : kind == "grdb" ? max(20, min(self.commits, peerWork / n)) : self.commits
                let row = try measure(kind: kind, connections: n, commits: commits, firstID: nextID)
                nextID += UInt64(commits)
                rows.append(row)
                report(row)
            }
        }
        return rows
    }

    private func measure(kind: String, connections n: Int, commits: Int, firstID: UInt64) throws -> Row {
        let server = try ChildProcess(["live-server", "--kind", kind, "--store", storePath, "--sqlite", sqlitePath])
        defer { server.stop() }
        guard let portLine = try server.lines(until: "port ").last, let port = Int(portLine.dropFirst(5)) else { throw BenchError("no port") }
        Thread.sleep(forTimeInterval: 1)
        let before = server.memory
        let load = try ChildProcess(["live-load", "--port", String(port), "--connections", String(n), "--kind", kind])
        defer { load.stop() }
        let ready = try load.lines(until: "ready ")
        let connectSeconds = Double(ready.last!.dropFirst(6)) ?? .nan
        // Settle (a GRDB server still fetches its observations' values after the clients hold
        // their first batches): until the server uses under 5% of a core for a second, or two
        // minutes. Then memory, and idle CPU over 2 s.
        for _ in 0..<120 {
            let start = server.cpuSeconds
            Thread.sleep(forTimeInterval: 1)
            if server.cpuSeconds - start < 0.05 { break }
        }
        let after = server.memory
        let idleStart = server.cpuSeconds
        Thread.sleep(forTimeInterval: 2)
        let idleCPU = (server.cpuSeconds - idleStart) / 2
        var row = Row(kind: kind, connections: n, connectSeconds: connectSeconds,
                      anonymousPerConnection: Double(after.anonymous - before.anonymous) / Double(n),
                      residentPerConnection: Double(after.resident - before.resident) / Double(n), idleCPU: idleCPU)
        guard commits > 0 else { return row }
        let cpuStart = server.cpuSeconds, wallStart = Date()
        server.send("write \(commits) \(rate) \(n) \(firstID)")
        var started: [UInt64: (UInt64, UInt64)] = [:]
        for line in try server.lines(until: "written") where line.hasPrefix("commit ") {
            let f = line.split(separator: " ").compactMap { UInt64($0) }
            started[f[0]] = (f[1], f[2])
        }
        load.send("await \(commits)")
        var latencies: [Double] = []
        for line in try load.lines(until: "received") where line.hasPrefix("got ") {
            let f = line.split(separator: " ").compactMap { UInt64($0) }
            if let (start, _) = started[f[0]], f[1] >= start { latencies.append(Double(f[1] - start) / 1_000) }
        }
        let busy = server.cpuSeconds - cpuStart - idleCPU * Date().timeIntervalSince(wallStart)
        row.commits = commits
        row.cpuPerCommit = busy / Double(commits)
        row.latency = Timing(samples: latencies)
        row.writeCall = Timing(samples: started.values.map { Double($0.1 - $0.0) / 1_000 })
        if latencies.count < commits { throw BenchError("\(kind), \(n) connections: \(latencies.count) of \(commits) commits reached their client") }
        return row
    }

    static let header = [
        "| server | connections | connect all (s) | server memory per connection, anonymous (KB) | resident, the store's mapped pages included (KB) | idle CPU (% of a core) | commits "
            + "| server CPU per commit (µs) | commit → client holds the batch, p50 / p99 (ms) | write call p50 (µs) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    static func format(_ r: Row) -> String {
        let kind = ["feedstore": "Feedstore (`addLiveQueries`)", "grdb": "GRDB `ValueObservation` a connection", "echo": "bare Hummingbird WebSocket (echo)"][r.kind] ?? r.kind
        return "| \(kind) | \(r.connections.formatted()) | " + String(format: "%.1f | %.1f | %.1f | %.1f | ", r.connectSeconds, r.anonymousPerConnection / 1_024,
                                                                        r.residentPerConnection / 1_024, r.idleCPU * 100)
            + (r.commits > 0 ? r.commits.formatted() : "–") + " | "
            + (r.cpuPerCommit.map { String(format: "%.0f", $0 * 1e6) } ?? "–") + " | "
            + (r.latency.map { String(format: "%.2f / %.2f", $0.p50 / 1_000, $0.p99 / 1_000) } ?? "–") + " | "
            + (r.writeCall.map { String(format: "%.0f", $0.p50) } ?? "–") + " |"
    }
}

extension LiveBench {
    /// The legs of a commit's way to its client, p50 and p99.
    static func legs(_ legs: LiveLegs.Result, rows: [Row], connections: Int) -> [String] {
        func cell(_ t: Timing) -> String { String(format: "%.0f / %.0f", t.p50, t.p99) }
        var lines = [
            "| leg | p50 / p99 (µs) |",
            "|---|---:|",
            "| the write call (a one-row commit, unsynced) | \(cell(legs.writeCall)) |",
            "| write start → the affected watcher's batch (bare `DynamicWatcher`s, one a contact) | \(cell(legs.watcherBatch)) |",
            "| the batch → its JSON text | \(cell(legs.json)) |",
            "| write start → the affected connection's batch frame (`LiveConnection`s, \(legs.frameBytes.formatted()) bytes a frame) | \(cell(legs.frameReady)) |",
        ]
        if let socket = rows.first(where: { $0.kind == "feedstore" && $0.connections == connections })?.latency {
            lines.append("| write start → the client holds the batch, over the WebSocket (the run above) | \(cell(socket)) |")
            lines.append("| so: frame → client (WebSocket write, loopback, the client's read), p50 | " + String(format: "%.0f |", socket.p50 - legs.frameReady.p50))
        }
        return lines
    }

    /// The targets, checked against the rows of the run.
    static func targets(_ rows: [Row]) -> [String] {
        func verdict(_ met: Bool) -> String { met ? "**met**" : "**not met**" }
        var lines = ["Targets:", ""]
        guard let most = rows.map(\.connections).max(),
              let feedstore = rows.first(where: { $0.kind == "feedstore" && $0.connections == most }) else { return lines }
        if let latency = feedstore.latency {
            lines.append("- commit → client p99 ≤ 10 ms at \(most.formatted()) connections: " + String(format: "%.2f ms, ", latency.p99 / 1_000) + verdict(latency.p99 <= 10_000))
        }
        if let echo = rows.first(where: { $0.kind == "echo" && $0.connections == most }) {
            let ratio = feedstore.anonymousPerConnection / echo.anonymousPerConnection
            lines.append("- memory per connection, subscription included, ≤ 1.5× a bare WebSocket connection at \(most.formatted()): "
                + String(format: "%.1f KB against %.1f KB, %.2f×, ", feedstore.anonymousPerConnection / 1_024, echo.anonymousPerConnection / 1_024, ratio)
                + verdict(ratio <= 1.5))
        }
        if let own = rows.first(where: { $0.kind == "feedstore" && $0.connections == 1_000 })?.cpuPerCommit,
           let peer = rows.first(where: { $0.kind == "grdb" && $0.connections == 1_000 })?.cpuPerCommit
        {
            lines.append("- server CPU per commit at 1,000 connections ≥ 100× lower than GRDB's: " + String(format: "%.0f µs against %.0f µs, %.0f×, ", own * 1e6, peer * 1e6, peer / own)
                + verdict(peer / own >= 100))
        }
        return lines
    }

    /// The rows as CSV, for the plots.
    static func csv(_ rows: [Row]) -> String {
        (["kind,connections,anonymous_per_connection,cpu_per_commit_us,latency_p50_ms,latency_p99_ms"] + rows.map { r in
            "\(r.kind),\(r.connections),\(Int(r.anonymousPerConnection)),"
                + [r.cpuPerCommit.map { $0 * 1e6 }, r.latency.map { $0.p50 / 1_000 }, r.latency.map { $0.p99 / 1_000 }]
                .map { $0.map { String(format: "%.3f", $0) } ?? "" }.joined(separator: ",")
        }).joined(separator: "\n") + "\n"
    }
}

extension LiveBench {
    /// The demo page's windows in headless chromium (`Benchmarks/live-browser.py`): its table.
    static func browser(storectl: String, store: String) throws -> [String] {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("live-browser.py").path
        let output = NSTemporaryDirectory() + "live-browser-\(getpid()).md"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, storectl, store, output]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("live-browser.py exited with \(process.terminationStatus)") }
        defer { try? FileManager.default.removeItem(atPath: output) }
        return try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }
}
