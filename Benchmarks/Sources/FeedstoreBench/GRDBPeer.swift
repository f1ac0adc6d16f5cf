import Feedstore
import DemoFeed
import Foundation
import GRDB

// The peer: GRDB.swift over SQLite in WAL mode (`DatabasePool`), with the demo feed's table and
// indexes. GRDB sets `synchronous = NORMAL` (no fsync per commit); durable runs set FULL on the
// writer connection, to compare like with like.
extension Message: FetchableRecord, PersistableRecord {
    public static var databaseTableName: String { "message" }
}

enum GRDBPeer {
    /// A pool at `path` with the `message` table; `unreadIndex` adds the demo feed's partial index.
    static func open(_ path: String, durable: Bool, unreadIndex: Bool = true) throws -> DatabasePool {
        try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let pool = try DatabasePool(path: path)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = \(durable ? "FULL" : "NORMAL")")
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS message (id INTEGER PRIMARY KEY, folder INTEGER NOT NULL, date DATETIME NOT NULL,
                    title TEXT NOT NULL, isRead BOOLEAN NOT NULL, contactId INTEGER NOT NULL);
                CREATE INDEX IF NOT EXISTS byFolderDate ON message(folder, date DESC);
                CREATE INDEX IF NOT EXISTS byContact ON message(contactId);
                """)
            if unreadIndex { try db.execute(sql: "CREATE INDEX IF NOT EXISTS unreadByDate ON message(date DESC) WHERE isRead = 0") }
        }
        return pool
    }

    /// Copies every message of a Feedstore store into the pool, 5,000 per transaction.
    static func copyMessages(from store: Store, to pool: DatabasePool) throws {
        let total = try store.read { try $0.count(Message.self) }
        var offset = 0
        while offset < total {
            let chunk = try store.read { try $0.query(Message.self, index: "byContact", offset: offset, limit: 5_000) }
            try pool.write { db in for m in chunk { try m.insert(db) } }
            offset += chunk.count
        }
    }

    /// The folder query of the demo feed, as SQL.
    static func folderRequest(_ folder: Int64) -> QueryInterfaceRequest<Message> {
        Message.filter(Column("folder") == folder).order(Column("date").desc)
    }
}

/// Waits for callbacks from another thread: each `signal` releases one `wait`.
final class Signal: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    func signal() { semaphore.signal() }
    func wait(timeout: TimeInterval = 600) -> Bool { semaphore.wait(timeout: .now() + timeout) == .success }
}

/// Process memory, from the kernel's accounting.
enum ProcessMemory {
    /// Anonymous memory (heap and stacks, not mapped files), in bytes.
    static var anonymous: Int { field("Anonymous:") }
    /// Resident memory, mapped files included, in bytes.
    static var resident: Int { field("Rss:") }

    private static func field(_ name: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/self/smaps_rollup", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix(name) } ?? ""
        return (Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) * 1024
    }
}

/// What the process has written through system calls (`/proc/self/io`): LMDB writes every
/// page of a commit with `pwrite`/`writev`.
enum ProcessWrites {
    /// Bytes passed to write calls, and the number of calls.
    static var current: (bytes: Int, calls: Int) {
        let text = (try? String(contentsOfFile: "/proc/self/io", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            Int(text.split(separator: "\n").first { $0.hasPrefix(name) }?.split(separator: " ").last ?? "0") ?? 0
        }
        return (field("wchar:"), field("syscw:"))
    }
}

/// Percentiles of timing samples.
struct Timing {
    var samples: [Double]
    var p50: Double { quantile(0.5) }
    var p99: Double { quantile(0.99) }

    func quantile(_ q: Double) -> Double {
        let sorted = samples.sorted()
        return sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]
    }

    /// Microseconds since `start` (a `DispatchTime` uptime in nanoseconds).
    static func micros(since start: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000 }
    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }
}

/// Keeps the optimizer from dropping a computed value.
@inline(never) func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }
