@_spi(Replication) import Feedstore
import FeedstoreDemo
import Foundation

/// Simulated power losses: a writer (`storectl demo mutate`, `upgrade` or `compact`) runs under
/// the write recorder, and the file states a power loss could leave at points of its run are
/// built from the log and checked. A power loss keeps what was synced; of the writes since the last sync, any subset of
/// their pages may have reached the disk. Each state is checked:
/// - the store opens (read-only, with its pages checked first) and `verify` is clean;
/// - `.full`: every commit acknowledged before the crash is there;
/// - `.relaxed`: every commit acknowledged before the last completed sync is there (the
///   newest ones may be lost);
/// - `.none`: the same checks, recorded but promising nothing: with no syncs, a power loss may
///   leave anything;
/// - a replica's relaxed commits, published before they are synced
///   (`StoreOptions.syncsAfterPublishing`): once the newest commit is rolled back, as after the
///   machine went down, every commit acknowledged before the last acknowledged one is there;
/// - a store in an older format that is being upgraded opens either in its old format (and
///   upgrades when opened for writing) or in the new one, always with every record and commit;
///   once `storectl upgrade` reported the upgrade, only in the new one;
/// - a compaction leaves either no copy or a whole one, and once `storectl compact` returned,
///   the whole one (see `runCompaction`);
/// - a store made by the writer (in directories it makes too) may be missing only while no
///   commit was acknowledged: the entries of its directories and data file, each kept or lost
///   until the directory holding it is synced, must be durable by the first acknowledgment;
/// - the store opens for writing, takes a write and verifies clean again.
/// Used by the test suite (a short run) and by `crash-loop --power-loss` (soaks).
public struct PowerLoss {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// A writer's run.
    public struct Workload: Sendable, CustomStringConvertible {
        public enum Writer: Sendable {
            /// `storectl demo mutate`: commits of changes to the demo feed.
            case mutate
            /// `storectl upgrade` of a store in an older format (a fixture in `Tests/Fixtures`).
            case upgrade(fixture: String)
            /// `storectl compact` of the demo feed into a new directory.
            case compact
            /// `storectl demo mutate` on a store it makes, in directories it makes.
            case create
        }

        public var name: String
        public var writer = Writer.mutate
        public var perCommit = 0
        public var commits = 0
        /// Commits the journal keeps at most, so that the writer trims it as it goes.
        public var keepCommits: Int? = nil
        /// A map size for the writer too small for what it writes, so that it grows the map.
        public var initialMapSize: Int? = nil
        /// Whether the writer moves a durable journal cursor (``cursorName``) past each commit.
        public var movesCursor = false
        /// Whether the writer publishes each commit before syncing it, as a replica with
        /// relaxed durability does (always relaxed, whatever the run's durability), so that each
        /// state is checked after its newest commit is rolled back.
        public var syncsAfterPublishing = false
        /// Whether the writer makes its commits durable through a commit log
        /// (`StoreOptions.keepsCommitLog`, always with full durability), so that each state is
        /// opened first by a writer keeping the log, which recovers it as after a machine crash.
        public var keepsCommitLog = false
        /// With ``keepsCommitLog``, the bytes of pages after which the writer checkpoints
        /// (`StoreOptions.commitLogCheckpointPages`); small, so that checkpoints fall among the
        /// commits.
        public var commitLogCheckpointPages: Int? = nil
        /// Checks the states of a ``syncsAfterPublishing`` writer without the roll-back, to
        /// show what the checker finds without it.
        public var withoutRollBack = false
        /// Replays the log as if the writer had synced nothing (no file or directory sync), to
        /// show what the checker finds when syncs are missing.
        public var withoutSyncs = false
        /// Replays the log as if the writer had synced no directory (files still synced), to
        /// show what the checker finds when only the directory syncs are missing.
        public var withoutDirectorySyncs = false

        public var description: String { name }

        public static let oneRowCommits = Workload(name: "one-row commits", perCommit: 1, commits: 60, movesCursor: true)
        public static let bulkCommits = Workload(name: "bulk commits", perCommit: 300, commits: 8)
        public static let journalTrimming = Workload(name: "journal trimming", perCommit: 2, commits: 60, keepCommits: 10)
        public static let mapGrowth = Workload(name: "map growth", perCommit: 300, commits: 8, initialMapSize: 256 << 10)
        public static let formatOneUpgrade = Workload(name: "format 1 upgrade", writer: .upgrade(fixture: "format-1-store"))
        public static let formatTwoUpgrade = Workload(name: "format 2 upgrade", writer: .upgrade(fixture: "format-2-store"))
        public static let compaction = Workload(name: "compaction", writer: .compact)
        public static let creation = Workload(name: "store creation", writer: .create, perCommit: 8, commits: 30)
        /// One-row commits with a moving cursor and a trimmed journal, published before their syncs.
        public static let publishedBeforeSync = Workload(name: "commits published before their syncs", perCommit: 2, commits: 60,
                                                         keepCommits: 10, movesCursor: true, syncsAfterPublishing: true)
        /// One-row commits with a moving cursor and a trimmed journal, through a commit log
        /// that checkpoints every few commits for the pages they wrote.
        public static let loggedCommits = Workload(name: "commits through a commit log", perCommit: 1, commits: 60, keepCommits: 10,
                                                   movesCursor: true, keepsCommitLog: true, commitLogCheckpointPages: 96 << 10)
        /// Commits of 48 rows through a commit log: records large enough that the log is synced
        /// on a thread of its own while LMDB writes the commit's pages.
        public static let loggedGroups = Workload(name: "group commits through a commit log", perCommit: 48, commits: 20, keepCommits: 10,
                                                  movesCursor: true, keepsCommitLog: true, commitLogCheckpointPages: 96 << 10)
        /// Bulk commits through a commit log into a map the writer must grow (a checkpoint each time).
        public static let loggedMapGrowth = Workload(name: "map growth under a commit log", perCommit: 300, commits: 8,
                                                     initialMapSize: 256 << 10, keepsCommitLog: true)
        public static let all = [oneRowCommits, bulkCommits, journalTrimming, mapGrowth, formatOneUpgrade, formatTwoUpgrade, compaction, creation,
                                 publishedBeforeSync, loggedCommits, loggedGroups, loggedMapGrowth]
    }

    /// What a crash state must hold.
    struct Expectation {
        /// The journal's last commit must be at least this one.
        var lastCommit: UInt64
        /// Where the workload's cursor must be at least (nil when the workload moves none).
        var cursor: UInt64? = nil
        /// Records per entity, when the writer changes none.
        var counts: [String: Int]? = nil
        /// For an upgrade: whether it was reported, so that the store must be in the current
        /// format (nil when the workload upgrades nothing).
        var upgraded: Bool? = nil
    }

    public struct Report: Sendable {
        public var states = 0
        /// Crash states checked per workload, by name.
        public var statesByWorkload: [String: Int] = [:]
        /// Acknowledged commits missing from a state (counted per state).
        public var acknowledgedLost = 0
        /// States that did not open, or whose verify found problems (before or after a write).
        public var failedVerify = 0
        /// The first few problems, described.
        public var problems: [String] = []

        public init() {}

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


    /// Compiles the write recorder into `directory` with the system's C compiler.
    public static func buildRecorder(in directory: String) throws -> String {
        try buildPreloadLibrary("Tools/write-recorder/recorder.c", named: "feedstore-write-recorder", in: directory)
    }

    /// Runs `workload` under the recorder, then checks about `wanted` crash states of it.
    public func run(_ workload: Workload, states wanted: Int, into report: inout Report) throws {
        let statesBefore = report.states
        defer { report.statesByWorkload[workload.name, default: 0] += report.states - statesBefore }
        var rng = SeededGenerator(seed: seed)
        let run = directory + "/\(workload.name.replacingOccurrences(of: " ", with: "-"))-\(seed)"
        try? FileManager.default.removeItem(atPath: run)
        try FileManager.default.createDirectory(atPath: run, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: run) }
        let recorder = try Self.buildRecorder(in: run)
        let creates = if case .create = workload.writer { true } else { false }
        // A made store lies two directories below any that exist.
        let store = run + (creates ? "/new/parent/store" : "/store")
        if !creates { try prepare(store, for: workload) }
        let initial = creates ? [] : try [UInt8](Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb")))
        let before = creates ? Facts(lastCommit: 0, counts: [:]) : try Facts(ofCopyOf: store, in: run)
        // Where a writer that publishes before syncing starts: the roll-back drops only its commits.
        let firstTransaction = workload.syncsAfterPublishing ? try Store.newestTransaction(at: store) : 0
        var arguments: [String]
        switch workload.writer {
        case .mutate, .create:
            arguments = ["demo", "mutate", store, "--commits", String(workload.commits), "--per-commit", String(workload.perCommit),
                         "--seed", String(seed), "--durability", workload.syncsAfterPublishing ? "relaxed" : workload.keepsCommitLog ? "full" : durability.rawValue]
            if workload.syncsAfterPublishing { arguments.append("--syncs-after-publishing") }
            if workload.keepsCommitLog { arguments.append("--commit-log") }
            if let pages = workload.commitLogCheckpointPages { arguments += ["--commit-log-checkpoint-pages", String(pages)] }
            if let keep = workload.keepCommits { arguments += ["--keep-commits", String(keep)] }
            if let size = workload.initialMapSize { arguments += ["--initial-map-size", String(size)] }
            if workload.movesCursor { arguments += ["--acknowledge-cursor", Self.cursorName] }
        case .upgrade: arguments = ["upgrade", store]
        case .compact: arguments = ["compact", store, run + "/copies/copy"]
        }
        let logPath = run + "/writes.log"
        if case .compact = workload.writer { try FileManager.default.createDirectory(atPath: run + "/copies", withIntermediateDirectories: true) }
        let writer = try runTool(storectl, arguments, environment: ["LD_PRELOAD": recorder, "FEEDSTORE_WRITE_LOG": logPath], timeout: 300)
        guard writer.status == 0 else { throw Failure(description: "\(workload): storectl \(arguments[0]): \(writer.stderr)") }
        var log = try WriteLog(contentsOf: logPath)
        for case let .unmodelled(call) in log.operations {
            throw Failure(description: "\(workload): the writer called \(call), which the crash states do not model")
        }
        if workload.withoutSyncs {
            log.operations.removeAll { if case .sync = $0 { true } else if case .directorySync = $0 { true } else { false } }
        }
        if workload.withoutDirectorySyncs {
            log.operations.removeAll { if case .directorySync = $0 { true } else { false } }
        }
        if case .compact = workload.writer {
            return try checkCompaction(log, of: store, into: run + "/copies/copy", before: before, states: wanted, rng: &rng, report: &report)
        }
        let acknowledgments = log.acknowledgments
        let cursorAcknowledgments = log.cursorAcknowledgments
        let upgradeReported = log.firstLine(startingWith: "upgraded \(store) from format ")
        switch workload.writer {
        case .upgrade:
            guard upgradeReported != nil else { throw Failure(description: "\(workload): storectl upgrade did not report the upgrade: \(writer.stdout)") }
        default:
            // The recorder notes every line the writer prints, so it saw each acknowledgment
            // the writer printed (a commit that changed nothing prints none).
            let printed = writer.stdout.split(separator: "\n").filter { $0.hasPrefix("committed ") }.count
            guard printed > 0, acknowledgments.count == printed else {
                throw Failure(description: "\(workload): the recorder saw \(acknowledgments.count) of the \(printed) commits "
                    + "the writer acknowledged: is it loaded?")
            }
        }
        if let size = workload.initialMapSize {
            // The file outgrew the initial map only if the writer grew the map.
            var file = "", end = 0
            for operation in log.operations {
                if case let .file(path) = operation { file = path }
                if case let .write(offset, bytes) = operation, file.hasSuffix("/data.mdb") { end = max(end, offset + bytes.count) }
            }
            guard end > size && initial.count <= size else {
                throw Failure(description: "\(workload): the writer wrote up to byte \(end) from a \(initial.count)-byte file: it did not grow a map of \(size) bytes")
            }
        }
        let count = log.operations.count
        let points = Self.crashPoints(in: 0...count, wanted: wanted / 2, rng: &rng)
        let dataFile = store + "/data.mdb", commitLog = store + "/commits.log"
        // The log is made by the writer: it starts empty.
        var replay = LogReplay(log, files: [dataFile: LogReplay.File(initial), commitLog: LogReplay.File([])])
        // What must survive: with a commit log, every acknowledged commit, whatever the run's durability.
        let durability = workload.keepsCommitLog ? Durability.full : self.durability
        for point in points {
            replay.advance(to: point)
            let file = replay.files[dataFile]!
            // A made store's directories and data file: any entry not durable yet may be lost,
            // and the store with it.
            let entries = creates ? replay.entries(leadingTo: dataFile) : []
            let acknowledged = acknowledgments.last { $0.operation < point }?.sequence ?? 0
            let synced = acknowledgments.last { $0.operation < file.lastSync }?.sequence ?? 0
            // What must survive; with `.none`, what was acknowledged, to record what is lost.
            var expected = Expectation(lastCommit: max(before.lastCommit, durability == .relaxed ? synced : acknowledged))
            if workload.movesCursor {
                expected.cursor = (durability == .relaxed ? cursorAcknowledgments.last { $0.operation < file.lastSync }
                                                          : cursorAcknowledgments.last { $0.operation < point })?.sequence ?? 0
            }
            if workload.syncsAfterPublishing {
                // Each commit is synced before the next begins, and the roll-back drops the
                // newest on disk: all but the last acknowledged commit (and cursor move) stay.
                let beforeLast = { (acknowledged: [(operation: Int, sequence: UInt64)]) in
                    acknowledged.filter { $0.operation < point }.dropLast().last?.sequence ?? 0
                }
                expected.lastCommit = max(before.lastCommit, beforeLast(acknowledgments))
                if workload.movesCursor { expected.cursor = beforeLast(cursorAcknowledgments) }
            }
            if case .upgrade = workload.writer {
                expected.counts = before.counts
                // `storectl upgrade` opens the store with full durability, whatever is checked.
                expected.upgraded = upgradeReported.map { $0 < point } ?? false
            }
            if creates && (entries.count < Self.madeEntries || entries.contains { !$0.durable }) {
                // Lost (or not made yet): nothing may have been acknowledged.
                report.states += 1
                let missing = entries.count < Self.madeEntries ? "not made yet" : "lost with \(entries.filter { !$0.durable }.map(\.path))"
                checkMissing(expected, context: "\(workload), crash after \(point) of \(count) writes and syncs, the store \(missing)",
                             report: &report)
                // Entries not yet durable may reach the disk anyway: the states with them follow.
                if entries.count < Self.madeEntries { continue }
            }
            // Where every crash point is taken (a short log), more page subsets are sampled.
            let images = file.images(samples: max(2, wanted / points.count), using: &rng)
            // The commit log's possible contents, paired with the data file's in turn.
            let logImages = workload.keepsCommitLog ? replay.files[commitLog]!.images(samples: max(2, wanted / points.count), using: &rng) : []
            for (index, image) in images.enumerated() {
                let logImage = logImages.isEmpty ? nil : logImages[index % logImages.count]
                if creates && image.isEmpty {
                    // A data file with nothing in it yet is a store not made.
                    report.states += 1
                    checkMissing(expected, context: "\(workload), crash after \(point) of \(count) writes and syncs, the data file empty",
                                 report: &report)
                    continue
                }
                report.states += 1
                try check(image, log: logImage, context: "\(workload), crash after \(point) of \(count) writes and syncs", expected, in: run,
                          made: creates, rollBackAfter: workload.syncsAfterPublishing && !workload.withoutRollBack ? firstTransaction : nil,
                          report: &report)
            }
        }
    }

    /// Crash points in `range`: every one when there are no more than `wanted`, else `wanted`
    /// chosen at random (fewer when some repeat), in order.
    static func crashPoints(in range: ClosedRange<Int>, wanted: Int, rng: inout SeededGenerator) -> [Int] {
        if range.count <= wanted { return Array(range) }
        return Set((0..<max(1, wanted)).map { _ in Int.random(in: range, using: &rng) }).sorted()
    }

    /// Makes the store a workload starts from, written and synced before the recorded run: what
    /// the disk holds at its start.
    func prepare(_ store: String, for workload: Workload) throws {
        if case let .upgrade(fixture) = workload.writer {
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: packageRoot.appendingPathComponent("Tests/Fixtures/\(fixture)/data.mdb").path,
                                             toPath: store + "/data.mdb")
            return
        }
        var options = StoreOptions(durability: .none)
        if let size = workload.initialMapSize { options.initialMapSize = size }
        let seeded = try Store(path: store, entities: DemoFeed.entities, options: options)
        defer { seeded.close() }
        var feed = DemoFeed(seed: seed)
        try feed.populate(seeded, messages: 400, contacts: 20)
        if workload.movesCursor { _ = try seeded.journalCursor(named: Self.cursorName) }
        try seeded.sync()
    }

    /// What a store holds, to compare a crash state with.
    struct Facts {
        var lastCommit: UInt64
        var counts: [String: Int]

        init(lastCommit: UInt64, counts: [String: Int]) {
            self.lastCommit = lastCommit
            self.counts = counts
        }

        init(_ store: Store) throws {
            (lastCommit, counts) = try store.read { tx in
                (try tx.journalBounds().last,
                 Dictionary(uniqueKeysWithValues: try tx.catalog.entities.keys.map { ($0, try tx.count(entity: $0)) }))
            }
        }

        /// The facts of a copy of the store at `path` opened for writing (which upgrades an
        /// older format), leaving the store itself as it is.
        init(ofCopyOf path: String, in directory: String) throws {
            let copy = directory + "/facts"
            try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: copy) }
            try FileManager.default.copyItem(atPath: path + "/data.mdb", toPath: copy + "/data.mdb")
            let store = try Store(path: copy, options: StoreOptions(durability: .none))
            defer { store.close() }
            try self.init(store)
        }
    }

    /// The durable journal cursor a workload's writer moves.
    static let cursorName = "consumer"

    /// The entries a made store needs: its two new parent directories, its own, and its data file.
    static let madeEntries = 4

    /// A state where a power loss took the store's data file (or a directory above it): only
    /// right when nothing was acknowledged.
    func checkMissing(_ expected: Expectation, context: String, report: inout Report) {
        if expected.lastCommit > 0 {
            report.acknowledgedLost += Int(expected.lastCommit)
            report.describe("\(context): acknowledged commits 1…\(expected.lastCommit) lost")
        }
    }

    /// Writes `image` as a store's data file (and `log`, when given, as its commit log) and checks
    /// it against `expected`.
    /// - Parameters:
    ///   - log: the commit log's contents; the state is then opened first by a writer keeping
    ///     the log, as the first process after a machine crash.
    ///   - made: the writer made the store, so a state may hold LMDB's new file before
    ///     Feedstore wrote anything into it.
    ///   - rollBackAfter: the newest commit, if later than this transaction, is rolled back
    ///     first, as after the machine went down under a writer that published commits before
    ///     syncing them.
    func check(_ image: [UInt8], log: [UInt8]? = nil, context: String, _ expected: Expectation, in run: String, made: Bool = false, rollBackAfter: UInt64? = nil,
               report: inout Report) throws
    {
        let path = run + "/state-\(report.states)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(image).write(to: URL(fileURLWithPath: path + "/data.mdb"))
        // A log the writer had not made yet (nothing of it on disk) is no log. The machine
        // starts again after a power loss.
        if let log, !log.isEmpty { try Data(CommitLogImage.madeBeforeRestart(log)).write(to: URL(fileURLWithPath: path + "/commits.log")) }
        func failed(_ problem: String) {
            report.failedVerify += 1
            report.describe("\(context): \(problem)")
        }
        func lost(_ count: UInt64, _ problem: String) {
            report.acknowledgedLost += Int(count)
            report.describe("\(context): \(problem)")
        }
        do {
            if let rollBackAfter { _ = try Store.rollBackNewestCommit(at: path, madeAfter: rollBackAfter) }
            var options = StoreOptions(readOnly: log == nil)
            options.keepsCommitLog = log != nil
            options.verifyPagesOnOpen = true
            let first: Store  // read-only, or upgrading an old format
            do {
                first = try Store(path: path, options: options)
            } catch FeedstoreError.formatUpgradeNeeded(_, let found, _) where expected.upgraded != nil {
                // Not upgraded yet: allowed until the upgrade was reported. Opened for writing
                // here, it upgrades, and is checked in the current format.
                if expected.upgraded == true { return failed("the upgrade was reported, yet the store is in format \(found)") }
                first = try Store(path: path, options: StoreOptions(durability: .none))
            } catch let FeedstoreError.notAStore(_, reason) where made && expected.lastCommit == 0
                && (reason.hasSuffix("without Feedstore metadata") || reason.contains("holds no commit")) {
                // LMDB made its file (or began to) and Feedstore had written nothing yet, which
                // opening for writing makes the store.
                first = try Store(path: path, options: StoreOptions(durability: .none))
            }
            do {
                defer { first.close() }
                let issues = try first.verify()
                guard issues.isEmpty else { return failed("verify: \(issues.prefix(3))") }
                let facts = try Facts(first)
                if facts.lastCommit < expected.lastCommit {
                    lost(expected.lastCommit - facts.lastCommit, "acknowledged commits \(facts.lastCommit + 1)…\(expected.lastCommit) lost")
                }
                if let counts = expected.counts, facts.counts != counts {
                    return failed("records per entity \(facts.counts), expected \(counts)")
                }
                if let required = expected.cursor {
                    // The cursor kept what it acknowledged, and resumes right after it.
                    let position = try first.read { try $0.journalCursors() }.first { $0.name == Self.cursorName }?.position
                    guard let position else { return failed("the cursor \(Self.cursorName) is gone") }
                    if position < required {
                        lost(required - position, "the cursor went back from \(required) to \(position)")
                    }
                    if position < facts.lastCommit {
                        let next = try first.read { try $0.journal(after: position, limit: 1) }.first?.sequence
                        guard next == position + 1 else { return failed("the cursor at \(position) resumes at \(next.map(String.init) ?? "nothing")") }
                    } else if position > facts.lastCommit {
                        return failed("the cursor at \(position) is past the journal's end, \(facts.lastCommit)")
                    }
                }
            }
            // The store takes writes again.
            var writable = StoreOptions(durability: .none)
            writable.verifyPagesOnOpen = true
            let store = try Store(path: path, options: writable)
            defer { store.close() }
            _ = try store.journalCursor(named: "after-power-loss", start: .oldest)
            let issues = try store.verify()
            if !issues.isEmpty {
                // What the next one to look needs: how large the state's file was, and is.
                let size = (try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb")[.size] as? Int) ?? nil
                failed("verify after a write: \(issues.prefix(3)) (data file \(image.count) bytes in the crash state, \(size.map(String.init) ?? "?") after the write)")
            }
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
            // The first round runs every workload, however many states the first ones left.
            for workload in Workload.all where round == 0 || report.states < wanted {
                var each = self
                each.seed = seed &+ round
                try each.run(workload, states: max(4, min(wanted - report.states, wanted / Workload.all.count)), into: &report)
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
