import Feedstore
import FeedstoreDemo
import Foundation

/// Kills a writing process at random moments and checks, after each kill, what a crash must
/// never cost. The writer is `storectl demo mutate` with durability full, which prints
/// `committed <sequence>` right after each commit returns: every such line is an
/// acknowledgement. After each SIGKILL the store is reopened and checked:
/// - every acknowledged commit is in the journal;
/// - `verify` finds nothing (records, indexes, counts, journal);
/// - a durable journal cursor resumes exactly after what it acknowledged: no gap, no duplicate;
/// - a watcher opened after the restart shows exactly what a fresh query does.
/// Used by the test suite (a bounded run) and by `Tools/crash-loop` (long soaks).
public struct CrashLoop {
    public var path: String
    public var storectl: URL
    public var seed: UInt64
    /// How long a writer runs before it is killed: uniformly within this range from its start, in
    /// milliseconds, or up to half the upper bound after its first commit.
    public var runMilliseconds: ClosedRange<Int> = 5...80

    public struct Report: Sendable {
        public var cycles = 0
        /// Commits acknowledged by the writers, all found after the kills.
        public var acknowledged = 0
        /// Kills that landed after at least one acknowledged commit of that writer.
        public var killsWhileWriting = 0
        /// The longest reopen + checks after a kill, in milliseconds.
        public var slowestRecovery = 0.0
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public init(path: String, storectl: URL, seed: UInt64) {
        self.path = path
        self.storectl = storectl
        self.seed = seed
    }

    /// Populates the store if needed, then runs `cycles` kill cycles; throws at the first broken guarantee.
    public func run(cycles: Int, progress: (Report) -> Void = { _ in }) throws -> Report {
        var rng = SeededGenerator(seed: seed)
        var report = Report()
        var consumed: UInt64
        do {
            let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .full))
            defer { store.close() }
            if try store.read({ try $0.count(Message.self) }) == 0 {
                var feed = DemoFeed(seed: seed)
                try feed.populate(store, messages: 2_000, contacts: 50)
            }
            consumed = try store.journalCursor(named: "crash-loop").position()
        }
        for cycle in 0..<cycles {
            let writer = try RunningTool(storectl, ["demo", "mutate", path, "--commits", "1000000", "--per-commit", "3",
                                                    "--seed", String(seed &+ UInt64(cycle)), "--durability", "full"])
            // Three kills in four land while the writer commits: after its first acknowledged
            // commit, however long a loaded machine takes to start it. The others land at any
            // moment from its start, opening the store included.
            if Int.random(in: 0..<4, using: &rng) > 0 {
                _ = writer.waitForLines(1, timeout: 30)
                usleep(UInt32(Int.random(in: 0...runMilliseconds.upperBound / 2, using: &rng)) * 1_000)
            } else {
                usleep(UInt32(Int.random(in: runMilliseconds, using: &rng)) * 1_000)
            }
            writer.kill()
            let result = writer.finish(timeout: 30)
            guard result.status == SIGKILL || result.status == 0 || result.stderr.isEmpty else {
                throw Failure(description: "cycle \(cycle): the writer failed before the kill: \(result.stderr)")
            }
            // Only complete lines count: a line cut by the kill was not printed, so not acknowledged.
            let acknowledged = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                .compactMap { $0.hasPrefix("committed ") ? UInt64($0.dropFirst("committed ".count)) : nil }
            report.acknowledged += acknowledged.count
            if !acknowledged.isEmpty { report.killsWhileWriting += 1 }

            let start = Date()
            let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .full))
            defer { store.close() }
            let last = try store.read { try $0.journalBounds().last }
            if let newest = acknowledged.max(), newest > last {
                throw Failure(description: "cycle \(cycle): commit \(newest) was acknowledged but the journal ends at \(last)")
            }
            let issues = try store.verify()
            guard issues.isEmpty else { throw Failure(description: "cycle \(cycle): verify found \(issues)") }

            // The durable consumer takes everything after its position, contiguously.
            let cursor = try store.journalCursor(named: "crash-loop")
            guard try cursor.position() == consumed else {
                throw Failure(description: "cycle \(cycle): the cursor is at \(try cursor.position()), it acknowledged \(consumed)")
            }
            while true {
                let commits = try cursor.next(limit: 500)
                guard let newest = commits.last?.sequence else { break }
                for commit in commits {
                    guard commit.sequence == consumed + 1 else {
                        throw Failure(description: "cycle \(cycle): the consumer expected commit \(consumed + 1), got \(commit.sequence)")
                    }
                    consumed = commit.sequence
                }
                try cursor.acknowledge(through: newest)
            }
            guard consumed == last else { throw Failure(description: "cycle \(cycle): the consumer stopped at \(consumed) of \(last)") }

            // A watcher opened now shows what a fresh query does.
            let query = Query(Message.self, index: "byFolderDate", range: .prefix(.int(Int64(cycle % Int(DemoFeed.folders)))))
            var mirror = SectionedMirror<Message>()
            guard let initial = try store.watch(query).poll() else { throw Failure(description: "cycle \(cycle): no initial batch") }
            try mirror.apply(initial)
            let fresh = try store.read { try $0.objects(in: query) }
            guard mirror.rows == fresh else { throw Failure(description: "cycle \(cycle): the watcher disagrees with a fresh query") }

            report.slowestRecovery = max(report.slowestRecovery, Date().timeIntervalSince(start) * 1_000)
            report.cycles += 1
            progress(report)
        }
        return report
    }
}
