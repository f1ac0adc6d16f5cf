import Feedstore
import FeedstoreDemo
import Foundation

/// Simulated power losses: a writer (`storectl demo mutate`) runs under the write recorder, and
/// the file states a power loss could leave at points of its run are built from the log and
/// checked. A power loss keeps what was synced; of the writes since the last sync, any subset of
/// their pages may have reached the disk. Each state is checked:
/// - the store opens (read-only, with its pages checked first) and `verify` is clean;
/// - `.full`: every commit acknowledged before the crash is there;
/// - `.relaxed`: every commit acknowledged before the last completed sync is there (the
///   newest ones may be lost);
/// - `.none`: the same checks, recorded but promising nothing: with no syncs, a power loss may
///   leave anything;
/// - the store opens for writing, takes a write and verifies clean again.
/// Used by the test suite (a short run) and by `crash-loop --power-loss` (soaks).
public struct PowerLoss {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// A writer's run: the changes per commit and the journal's bound.
    public struct Workload: Sendable, CustomStringConvertible {
        public var name: String
        public var perCommit: Int
        public var commits: Int
        /// Commits the journal keeps at most, so that the writer trims it as it goes.
        public var keepCommits: Int? = nil
        /// A map size for the writer too small for what it writes, so that it grows the map.
        public var initialMapSize: Int? = nil
        /// Whether the writer moves a durable journal cursor (``cursorName``) past each commit.
        public var movesCursor = false

        public var description: String { name }

        public static let oneRowCommits = Workload(name: "one-row commits", perCommit: 1, commits: 60, movesCursor: true)
        public static let bulkCommits = Workload(name: "bulk commits", perCommit: 300, commits: 8)
        public static let journalTrimming = Workload(name: "journal trimming", perCommit: 2, commits: 60, keepCommits: 10)
        public static let mapGrowth = Workload(name: "map growth", perCommit: 300, commits: 8, initialMapSize: 256 << 10)
        public static let all = [oneRowCommits, bulkCommits, journalTrimming, mapGrowth]
    }

    public struct Report: Sendable {
        public var states = 0
        /// Acknowledged commits missing from a state (counted per state).
        public var acknowledgedLost = 0
        /// States that did not open, or whose verify found problems (before or after a write).
        public var failedVerify = 0
        /// The first few problems, described.
        public var problems: [String] = []

        /// Keeps a problem's description, up to the first few.
        mutating func describe(_ problem: String) {
            if problems.count < 10 { problems.append(problem) }
        }

        public var summary: String {
            "power-loss: \(states) crash states, \(acknowledgedLost) acknowledged commits lost, \(failedVerify) stores failed verify"
        }
    }

    public var durability: Durability
    public var seed: UInt64
    public var storectl: URL
    public var directory: String

    public init(durability: Durability, seed: UInt64, storectl: URL, directory: String) {
        self.durability = durability
        self.seed = seed
        self.storectl = storectl
        self.directory = directory
    }

    /// The recorder's source, beside the package's tools.
    static var recorderSource: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Tools/write-recorder/recorder.c").path
    }

    /// Compiles the write recorder into `directory` with the system's C compiler.
    public static func buildRecorder(in directory: String) throws -> String {
        let library = directory + "/libfeedstore-write-recorder.so"
        let result = try runTool(URL(fileURLWithPath: "/usr/bin/env"), ["cc", "-shared", "-fPIC", "-O2", "-o", library, recorderSource, "-ldl"],
                                 timeout: 120)
        guard result.status == 0 else { throw Failure(description: "cc could not build the write recorder: \(result.stderr)") }
        return library
    }

    /// Runs `workload` under the recorder, then checks `states` crash states of it.
    public func run(_ workload: Workload, states wanted: Int, into report: inout Report) throws {
        var rng = SeededGenerator(seed: seed)
        let run = directory + "/\(workload.name.replacingOccurrences(of: " ", with: "-"))-\(seed)"
        try? FileManager.default.removeItem(atPath: run)
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: run) }
        let recorder = try Self.buildRecorder(in: run)
        let store = run + "/store"
        // The demo feed, written and synced before the recorded run: what the disk holds at its start.
        do {
            var options = StoreOptions(durability: .none)
            if let size = workload.initialMapSize { options.initialMapSize = size }
            let seeded = try Store(path: store, entities: DemoFeed.entities, options: options)
            var feed = DemoFeed(seed: seed)
            try feed.populate(seeded, messages: 400, contacts: 20)
            if workload.movesCursor { _ = try seeded.journalCursor(named: Self.cursorName) }
            try seeded.sync()
            seeded.close()
        }
        let initial = try [UInt8](Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb")))
        var arguments = ["demo", "mutate", store, "--commits", String(workload.commits), "--per-commit", String(workload.perCommit),
                         "--seed", String(seed), "--durability", durability.rawValue]
        if let keep = workload.keepCommits { arguments += ["--keep-commits", String(keep)] }
        if let size = workload.initialMapSize { arguments += ["--initial-map-size", String(size)] }
        if workload.movesCursor { arguments += ["--acknowledge-cursor", Self.cursorName] }
        let log = run + "/writes.log"
        let writer = try runTool(storectl, arguments, environment: ["LD_PRELOAD": recorder, "FEEDSTORE_WRITE_LOG": log], timeout: 300)
        guard writer.status == 0 else { throw Failure(description: "demo mutate: \(writer.stderr)") }
        let operations = try WriteLog(contentsOf: log)
        let acknowledgments = operations.acknowledgments
        let cursorAcknowledgments = operations.cursorAcknowledgments
        guard acknowledgments.count >= workload.commits / 2 else {
            throw Failure(description: "the recorder saw \(acknowledgments.count) acknowledged commits of \(workload.commits): is it loaded?")
        }
        if let size = workload.initialMapSize {
            // The file outgrew the initial map only if the writer grew the map.
            let end = operations.operations.map { if case let .write(offset, bytes) = $0 { offset + bytes.count } else { 0 } }.max() ?? 0
            guard end > size && initial.count <= size else {
                throw Failure(description: "\(workload): the writer wrote up to byte \(end) from a \(initial.count)-byte file: it did not grow a map of \(size) bytes")
            }
        }
        // Crash points, in order: a crash "at i" happens after operations 0..<i.
        let count = operations.operations.count
        let points = Set((0..<max(1, wanted / 2)).map { _ in Int.random(in: 0...count, using: &rng) }).sorted()
        var durable = initial
        var pending: [(offset: Int, bytes: ArraySlice<UInt8>)] = []
        var pendingSize: Int?
        var lastSync = -1
        var next = 0
        for point in points {
            // Replays the operations before the crash point.
            while next < point {
                switch operations.operations[next] {
                case let .write(offset, bytes):
                    // Page by page: a power loss keeps or loses each page of a write on its own.
                    var at = 0
                    while at < bytes.count {
                        let end = min(bytes.count, (offset + at) / Self.page * Self.page + Self.page - offset)
                        pending.append((offset + at, bytes[at..<end]))
                        at = end
                    }
                case .sync:
                    for write in pending { Self.apply(write, to: &durable) }
                    if let size = pendingSize { Self.resize(&durable, to: size) }
                    pending = []
                    pendingSize = nil
                    lastSync = next
                case let .truncate(size): pendingSize = size
                case .output, .rename, .directorySync: break
                }
                next += 1
            }
            let acknowledged = acknowledgments.last { $0.operation < point }?.sequence ?? 0
            let synced = acknowledgments.last { $0.operation < lastSync }?.sequence ?? 0
            // What must survive; with `.none`, what was acknowledged, to record what is lost.
            let required: UInt64 = durability == .relaxed ? synced : acknowledged
            let cursorRequired = (durability == .relaxed ? cursorAcknowledgments.last { $0.operation < lastSync }
                                                         : cursorAcknowledgments.last { $0.operation < point })?.sequence
            for subset in Self.subsets(pending.count, rng: &rng) {
                var image = durable
                for i in subset { Self.apply(pending[i], to: &image) }
                if let size = pendingSize, Bool.random(using: &rng) { Self.resize(&image, to: size) }
                report.states += 1
                try check(image, at: point, of: count, required: required, cursorRequired: workload.movesCursor ? cursorRequired ?? 0 : nil,
                          workload: workload, in: run, report: &report)
            }
        }
    }

    static let page = 4_096
    /// The durable journal cursor a workload's writer moves.
    static let cursorName = "consumer"

    static func apply(_ write: (offset: Int, bytes: ArraySlice<UInt8>), to image: inout [UInt8]) {
        if image.count < write.offset + write.bytes.count { image += [UInt8](repeating: 0, count: write.offset + write.bytes.count - image.count) }
        image.replaceSubrange(write.offset..<write.offset + write.bytes.count, with: write.bytes)
    }

    static func resize(_ image: inout [UInt8], to size: Int) {
        if image.count > size { image.removeLast(image.count - size) } else { image += [UInt8](repeating: 0, count: size - image.count) }
    }

    /// Which of `count` pending pages reach the disk: every subset when there are few, else
    /// none, all, and two chosen at random.
    static func subsets(_ count: Int, rng: inout SeededGenerator) -> [[Int]] {
        if count <= 2 { return (0..<(1 << count)).map { mask in (0..<count).filter { mask & (1 << $0) != 0 } } }
        return [[], Array(0..<count)] + (0..<2).map { _ in (0..<count).filter { _ in Bool.random(using: &rng) } }
    }

    /// Writes `image` as a store's data file and checks it.
    /// - Parameter cursorRequired: where the workload's cursor must be at least (nil when the
    ///   workload moves none).
    func check(_ image: [UInt8], at point: Int, of count: Int, required: UInt64, cursorRequired: UInt64?, workload: Workload,
               in run: String, report: inout Report) throws {
        let path = run + "/state-\(report.states)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(image).write(to: URL(fileURLWithPath: path + "/data.mdb"))
        let context = "\(workload), crash after \(point) of \(count) writes and syncs"
        func failed(_ problem: String) {
            report.failedVerify += 1
            report.describe("\(context): \(problem)")
        }
        func lost(_ count: UInt64, _ problem: String) {
            report.acknowledgedLost += Int(count)
            report.describe("\(context): \(problem)")
        }
        do {
            let last: UInt64
            do {
                var options = StoreOptions(readOnly: true)
                options.verifyPagesOnOpen = true
                let store = try Store(path: path, options: options)
                defer { store.close() }
                let issues = try store.verify()
                guard issues.isEmpty else { return failed("verify: \(issues.prefix(3))") }
                last = try store.read { try $0.journalBounds().last }
                if let cursorRequired {
                    // The cursor kept what it acknowledged, and resumes right after it.
                    let position = try store.read { try $0.journalCursors() }.first { $0.name == Self.cursorName }?.position
                    guard let position else { return failed("the cursor \(Self.cursorName) is gone") }
                    if position < cursorRequired {
                        lost(cursorRequired - position, "the cursor went back from \(cursorRequired) to \(position)")
                    }
                    if position < last {
                        let next = try store.read { try $0.journal(after: position, limit: 1) }.first?.sequence
                        guard next == position + 1 else { return failed("the cursor at \(position) resumes at \(next.map(String.init) ?? "nothing")") }
                    } else if position > last {
                        return failed("the cursor at \(position) is past the journal's end, \(last)")
                    }
                }
            }
            if last < required {
                lost(required - last, "acknowledged commits \(last + 1)…\(required) lost")
            }
            // The store takes writes again.
            var options = StoreOptions(durability: .none)
            options.verifyPagesOnOpen = true
            let store = try Store(path: path, options: options)
            defer { store.close() }
            _ = try store.journalCursor(named: "after-power-loss", start: .oldest)
            let issues = try store.verify()
            if !issues.isEmpty { failed("verify after a write: \(issues.prefix(3))") }
        } catch {
            failed("\(error)")
        }
    }

    /// Runs the workloads in turn, each with a seed of its own, until `states` crash states are
    /// checked.
    public func run(states wanted: Int, progress: (Report) -> Void = { _ in }) throws -> Report {
        var report = Report()
        var round: UInt64 = 0
        while report.states < wanted {
            for workload in Workload.all where report.states < wanted {
                var each = self
                each.seed = seed &+ round
                try each.run(workload, states: min(wanted - report.states, max(4, wanted / Workload.all.count)), into: &report)
                progress(report)
            }
            round += 1
        }
        return report
    }

    /// Whether the report breaks the durability's promise (`.none` promises nothing).
    public func broken(_ report: Report) -> Bool {
        durability != .none && (report.acknowledgedLost > 0 || report.failedVerify > 0)
    }
}
