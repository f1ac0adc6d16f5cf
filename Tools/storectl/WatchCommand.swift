import ArgumentParser
import DemoConsole
import Dispatch
import Feedstore
import Foundation
import Synchronization

struct WatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watch",
        abstract: "Print live change batches of an index range while other processes write.",
        discussion: """
        The first batch is the whole snapshot (with --jsonl, every section and row as inserts; \
        in readable form, each section's row count, and the rows themselves for a window of at \
        most \(WatchCommand.printedWindow) rows). Each later batch takes the snapshot to the \
        store's state after one or more commits, with index paths [section, row]: deletes and \
        move sources at old paths, inserts and move destinations at new paths. \
        Stops after --max-batches, once every commit up to --until-sequence is taken in, or on \
        Ctrl-C.

        Examples:
          storectl watch ./demo-store --entity Message --index byFolderDate \\
            --section-by 1
          storectl watch ./demo-store --entity Message --index unreadByDate \\
            --limit 20 --jsonl
          storectl watch ./demo-store --entity Message --index byFolderDate \\
            --prefix '[2]' --mode indexes
        """
    )

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case objects, indexes
    }

    @Argument(help: "The store directory.")
    var path: String

    @Option(help: "The entity to watch.")
    var entity: String

    @Option(help: "The index whose order the rows follow.")
    var index: String

    @OptionGroup var keys: RangeOptions

    @Flag(help: "Walk the order backwards.")
    var reverse = false

    @Option(name: .customLong("section-by"), help: "Group rows into sections by their first K index components.")
    var sectionBy: Int = 0

    @Option(help: "Show a window of the order from this position (with --limit).")
    var offset: Int?

    @Option(help: "Show at most this many rows of the order (a window).")
    var limit: Int?

    @Option(help: "Report updates only when one of these comma-separated fields changed.")
    var fields: String?

    @Option(help: """
        objects: rows with ids and records; indexes: positions only, rows grouped into ranges. \
        Default: indexes for the readable form of an unwindowed watch (its first batch shows counts, \
        so no row is read), objects otherwise.
        """)
    var mode: Mode?

    /// Windows of at most this many rows print their rows in the first batch.
    static let printedWindow = 100

    /// The mode asked for, or the one that reads no rows the output does not show.
    var effectiveMode: Mode { mode ?? (jsonl || limit != nil ? .objects : .indexes) }

    /// text, or jsonl: one JSON object per batch (its format is in the command-line tool's
    /// documentation).
    @OptionGroup var output: FormatOption

    private var jsonl: Bool { output.chosen == .jsonl }

    @Option(name: .customLong("max-batches"), help: "Stop after this many batches (the initial one included).")
    var maxBatches: Int?

    @Option(name: .customLong("until-sequence"), help: "Stop once every commit up to this journal sequence is taken in.")
    var untilSequence: UInt64?

    func validate() throws {
        guard sectionBy >= 0 else { throw ValidationError("--section-by must be 0 or more") }
        if let offset, offset < 0 { throw ValidationError("--offset must be 0 or more") }
        if let limit, limit < 0 { throw ValidationError("--limit must be 0 or more") }
        if offset != nil && limit == nil { throw ValidationError("--offset needs --limit (a window is offset and limit)") }
        if let maxBatches, maxBatches < 1 { throw ValidationError("--max-batches must be 1 or more") }
        try output.require([.text, .jsonl], because: "watch prints batches as they come")
    }

    func run() throws {
        try StoreAccess.withReadOnlyStore(path) { store in
            let entityInfo = try StoreAccess.entity(entity, in: store)
            let definition = StoreAccess.index(index, of: entityInfo)
            guard sectionBy <= definition.components.count else {
                StoreAccess.fail("--section-by \(sectionBy) is more than index \(index)'s \(definition.components.count) components")
            }
            let (range, filter) = keys.query(of: entityInfo, index: index)
            var options = WatchOptions(sectionBy: sectionBy)
            options.fields = fields.map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }
            options.window = limit.map { WatchWindow(offset: offset ?? 0, limit: $0) }
            switch effectiveMode {
            case .objects:
                try follow(store.watch(entity: entity, index: index, range: range, reverse: reverse, filter: filter,
                                       options: options))
            case .indexes:
                try follow(store.watchIndexes(entity: entity, index: index, range: range, reverse: reverse,
                                              filter: filter, options: options))
            }
        }
    }

    /// A batch's lines: one JSON object, or a title and its changes (a whole snapshot as each
    /// section's row count).
    private func render<B: PrintableBatch>(_ batch: B) -> [String] {
        if jsonl { return [batch.jsonLine] }
        let kind = batch.isInitial ? " (initial)" : batch.isReset ? " (reset: discard what was shown)" : ""
        let title = "batch \(batch.fromSequence)→\(batch.toSequence)\(kind)"
        guard batch.isInitial || batch.isReset else { return [title] + batch.changeLines }
        let sections = batch.sectionInserts
        var counts = [Int](repeating: 0, count: sections.count)
        for run in batch.insertedRuns where counts.indices.contains(run.section) { counts[run.section] += run.count }
        let summary = [title] + sections.map { "  section \($0.index) [\(BatchPrinter.describe($0.key))]: \(counts[$0.index].formatted()) rows" }
            + ["  \(sections.count.formatted()) sections, \(counts.reduce(0, +).formatted()) rows"]
        // A small window's rows are what the user looks at.
        guard let limit, limit <= Self.printedWindow else { return summary }
        return summary + batch.rowLines
    }

    /// Prints batches until a stop condition: --max-batches, --until-sequence, or SIGINT.
    private func follow<B: PrintableBatch, R>(_ watcher: BatchWatcher<B, R>) throws {
        let interrupt = StopOnInterrupt()
        defer { interrupt.restore() }
        var delivered = 0
        while !watcher.isCancelled && !interrupt.happened {
            if let batch = try watcher.next(timeout: 0.1) {
                for line in render(batch) { Output.line(line) }
                Output.flush()
                delivered += 1
                if let maxBatches, delivered >= maxBatches { return }
            }
            // The initial batch is always taken first; after it, the sequence is the snapshot's.
            if let untilSequence, delivered > 0, watcher.sequence >= untilSequence { return }
        }
    }
}

/// Turns SIGINT into a clean stop: ``happened`` turns true, and the command, which checks it
/// between batches, returns normally. A handler of its own rather than a dispatch signal source:
/// that one needs SIGINT ignored and blocked in every thread, and a thread that left it
/// unblocked (the main thread unblocks it, for parents that block it) took it and dropped it.
final class StopOnInterrupt {
    private static let interrupted = Atomic<Bool>(false)

    init() {
        Self.interrupted.store(false, ordering: .relaxed)
        // Only an atomic store: async-signal-safe.
        signal(SIGINT) { _ in StopOnInterrupt.interrupted.store(true, ordering: .relaxed) }
    }

    var happened: Bool { Self.interrupted.load(ordering: .relaxed) }

    func restore() {
        signal(SIGINT, SIG_DFL)
    }
}
