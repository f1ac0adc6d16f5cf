import DemoFeed
import Feedstore
import Foundation
import GRDB

/// A user scrolling a list of every message (byFolderDate, sectioned by folder) while another
/// thread commits one-row changes: screens of 50 rows read one after another (a fling), then
/// screens at random positions (jumps). A screen is what a frame does: take the batches
/// committed since the last one, then read the 50 rows it shows. Feedstore reads through a
/// `LazyLiveList`; GRDB fetches the same screens with `LIMIT 50 OFFSET p` from its own copy,
/// with its own writer. Memory is the anonymous memory (heap, not the mapped file) the list adds.
struct LazyListScroll {
    let sizes: [Int]
    let directory: String
    /// GRDB copies of more rows than this are not made (a copy of 10 million rows takes minutes,
    /// and an offset near its end takes a second per screen).
    let grdbUpTo: Int
    let screens = 300
    static let screenRows = 50

    struct Row {
        var size: Int
        var fling: Timing
        var jumps: Timing
        var grdbFling: Timing?
        var grdbJumps: Timing?
        var commits: Int
        var memory: Int
        var cached: Int
    }

    func run(_ progress: (Row) -> Void) async throws -> [Row] {
        var rows: [Row] = []
        for size in sizes {
            try? FileManager.default.removeItem(atPath: directory)
            let store = try WatcherBench.populatedStore(at: directory + "/feedstore", size: size)
            var positions = SplitMix(state: UInt64(size))
            // A fling longer than the list starts over from its top.
            let flingStart = Int.random(in: 0..<(size - Self.screenRows), using: &positions)
            let fling = (0..<screens).map { (flingStart + $0 * Self.screenRows) % (size - Self.screenRows) }
            let jumps = (0..<screens).map { _ in Int.random(in: 0..<(size - Self.screenRows), using: &positions) }

            var grdbFling: Timing?, grdbJumps: Timing?
            if size <= grdbUpTo {
                let pool = try GRDBPeer.open(directory + "/grdb.sqlite", durable: false)
                try GRDBPeer.copyMessages(from: store, to: pool)
                let writer = CommittingThread { rng in try Self.moveDate(in: pool, size: size, using: &rng) }
                grdbFling = try Self.grdbScreens(pool, fling)
                grdbJumps = try Self.grdbScreens(pool, jumps)
                writer.stop()
                try pool.close()
            }

            let before = ProcessMemory.anonymous
            let writer = CommittingThread { rng in try WatcherBench.moveDate(of: UInt64.random(in: 1...UInt64(size), using: &rng), in: store, using: &rng) }
            let measured = try await MainActor.run {
                let list = LazyLiveList(store: store, query: Query(Message.self, index: "byFolderDate"), options: WatchOptions(sectionBy: 1))
                defer { list.stop() }
                let flung = try Self.screens(list, fling)
                let jumped = try Self.screens(list, jumps)
                return (flung, jumped, ProcessMemory.anonymous - before, list.cachedCount)
            }
            let commits = writer.stop()
            store.close()
            let row = Row(size: size, fling: measured.0, jumps: measured.1, grdbFling: grdbFling, grdbJumps: grdbJumps,
                          commits: commits, memory: measured.2, cached: measured.3)
            progress(row)
            rows.append(row)
        }
        try? FileManager.default.removeItem(atPath: directory)
        return rows
    }

    /// Each screen: the batches committed since the last screen, then its 50 rows.
    @MainActor
    static func screens(_ list: LazyLiveList<Message>, _ starts: [Int]) throws -> Timing {
        var samples: [Double] = []
        for start in starts {
            let begin = Timing.now
            try list.update()
            let first = min(start, max(0, list.count - screenRows))
            for position in first ..< min(first + screenRows, list.count) { blackHole(list[position]) }
            samples.append(Timing.micros(since: begin))
        }
        return Timing(samples: samples)
    }

    static func grdbScreens(_ pool: DatabasePool, _ starts: [Int]) throws -> Timing {
        let ordered = Message.order(Column("folder"), Column("date").desc)
        var samples: [Double] = []
        for start in starts {
            let begin = Timing.now
            blackHole(try pool.read { db in try ordered.limit(screenRows, offset: start).fetchAll(db) })
            samples.append(Timing.micros(since: begin))
        }
        return Timing(samples: samples)
    }

    /// GRDB's copy of the measured update: a message's date moves by up to an hour.
    static func moveDate(in pool: DatabasePool, size: Int, using rng: inout SplitMix) throws {
        let id = Int64.random(in: 1...Int64(size), using: &rng)
        let seconds = Double(Int.random(in: 1...3_600, using: &rng)) * (Bool.random(using: &rng) ? 1 : -1)
        try pool.write { db in
            guard var m = try Message.fetchOne(db, key: id) else { return }
            m.date = m.date.addingTimeInterval(seconds)
            try m.update(db)
        }
    }

    static let header = """
        | messages | Feedstore fling, per screen p50 / p99 µs | Feedstore jumps, p50 / p99 µs | GRDB fling (LIMIT/OFFSET), p50 / p99 µs | GRDB jumps, p50 / p99 µs | GRDB ÷ Feedstore, fling / jumps (p50) | commits meanwhile | heap the list adds | rows cached |
        |---:|---:|---:|---:|---:|---:|---:|---:|---:|
        """

    static func format(_ r: Row) -> String {
        func t(_ x: Timing?) -> String { x.map { String(format: "%.0f / %.0f", $0.p50, $0.p99) } ?? "–" }
        func ratio(_ peer: Timing?, _ own: Timing) -> String {
            guard let peer else { return "–" }
            let x = peer.p50 / own.p50
            return x >= 10 ? "\(Int(x).formatted())×" : String(format: "%.1f×", x)
        }
        let memory = r.memory < 1_048_576 ? "\(max(0, r.memory) / 1024) KB" : String(format: "%.1f MB", Double(r.memory) / 1_048_576)
        return "| \(r.size.formatted()) | \(t(r.fling)) | \(t(r.jumps)) | \(t(r.grdbFling)) | \(t(r.grdbJumps)) | "
            + "\(ratio(r.grdbFling, r.fling)) / \(ratio(r.grdbJumps, r.jumps)) | \(r.commits.formatted()) | \(memory) | \(r.cached) |"
    }
}

/// A thread that commits one change every two milliseconds until stopped.
final class CommittingThread: @unchecked Sendable {
    private let stopped = NSLock()
    private var isStopped = false
    private var count = 0
    private let done = DispatchSemaphore(value: 0)

    init(_ commit: @escaping @Sendable (inout SplitMix) throws -> Void) {
        Thread.detachNewThread { [self] in
            var rng = SplitMix(state: 42)
            while !stopped.withLock({ isStopped }) {
                do { try commit(&rng) } catch { fatalError("the writer failed: \(error)") }
                stopped.withLock { count += 1 }
                usleep(2_000)
            }
            done.signal()
        }
    }

    /// Stops the thread; returns how many commits it made.
    @discardableResult
    func stop() -> Int {
        stopped.withLock { isStopped = true }
        done.wait()
        return stopped.withLock { count }
    }
}
