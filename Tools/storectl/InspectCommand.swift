import ArgumentParser
import Feedstore
import FeedstoreJetStream
import Foundation

struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a store's environment, entities, indexes and journal, without scanning data.",
        discussion: """
        Reads LMDB's statistics and the counted indexes only, so it is fast on any size of store. \
        For a replica it shows the last commit applied and how long ago its origin made it; with \
        --nats and --stream, also how many commits the stream holds past it.

        Examples:
          storectl inspect ./demo-store
          storectl inspect ./demo-store --format json
          storectl inspect ./demo-store --jsonl
          storectl inspect ./replica --nats nats://127.0.0.1:4222 --stream FEED
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    /// text, or the report as JSON (its schema is in the command-line tool's documentation):
    /// indented, or on one line with jsonl.
    @OptionGroup var output: FormatOption

    @Option(name: .customLong("nats"), help: "For a replica: the NATS server whose stream it follows (with --stream), to show how far behind it is.")
    var natsURL: String?

    @Option(help: "For a replica: the stream it follows (with --nats).")
    var stream: String?

    func validate() throws {
        try output.require([.text, .json, .jsonl], because: "inspect prints one nested report, not rows")
        guard (natsURL == nil) == (stream == nil) else { throw ValidationError("--nats and --stream go together") }
    }

    func run() throws {
        let report = try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { try $0.inspect() }
        if output.chosen != .text {
            let encoder = JSONEncoder()
            encoder.outputFormatting = output.chosen == .json ? [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
                : [.sortedKeys, .withoutEscapingSlashes]
            Output.line(String(decoding: try encoder.encode(report), as: UTF8.self))
            return
        }
        let e = report.environment
        let page = e.pageSize
        Output.line("Store \(report.path) (format \(report.formatVersion))")
        if let identifier = report.identifier { Output.line("  id         \(identifier)") }
        if let replica = report.replica {
            var line = "  replica of \(replica.origin): applied its commit \(replica.originSequence) (stream message \(replica.streamSequence))"
            if let time = replica.originTime {
                line += String(format: ", which the origin made %.0f ms ago", Date().timeIntervalSince(time) * 1_000)
            }
            Output.line(line)
            if let natsURL, let stream {
                let last = try JetStreamConnection.fromEnvironment(url: natsURL).lastSequence(ofStream: stream)
                let behind = last > replica.streamSequence ? last - replica.streamSequence : 0
                Output.line("  lag        \(behind.formatted()) commits behind stream \(stream)"
                    + (behind > 0 ? (replica.originTime.map { String(format: ", the oldest waiting at least %.0f ms", Date().timeIntervalSince($0) * 1_000) } ?? "") : ""))
            }
        }
        Output.line("  file       \(readableSize(e.fileSize)) (data.mdb)")
        Output.line("  map        \(readableSize(e.mapSize)), \(String(format: "%.1f", e.mapUsedPercent))% written "
            + "(\(e.pagesUsed.formatted()) pages of \(readableSize(page))); a writer grows it when 75% is reached")
        Output.line("  free       \(e.freePages.formatted()) pages (\(readableSize(e.freePages * page))) free for reuse")
        Output.line("  last txn   \(e.lastTransactionID.formatted())")
        if let log = report.commitLog {
            Output.line("  commit log \(readableSize(log.fileSize)) (commits.log), \(log.commitsSinceCheckpoint.formatted()) commits "
                + "(\(readableSize(log.bytesSinceCheckpoint))) since the checkpoint at txn \(log.checkpointTransaction.formatted()); "
                + (log.kept ? "a process writes the store through it" : "no process keeps it now"))
        }
        Output.line("  readers    \(e.readers.count) reading now; \(e.readersUsed) of \(e.maxReaders) slots taken since the store was opened")
        for r in e.readers { Output.line("    pid \(r.pid), thread \(r.thread), " + (r.transaction.map { "reading snapshot \($0)" } ?? "between reads")) }
        for entity in report.entities {
            Output.line("\nEntity \(entity.name) (key: \(entity.primaryKeyKind)): \(entity.records.formatted()) records")
            Output.line("  fields     " + entity.fields.map { "\($0.name): \($0.kind)" }.joined(separator: ", "))
            if !entity.indexes.isEmpty {
                let rows = entity.indexes.map { i in
                    [i.name, i.components.joined(separator: ", "), [i.unique ? "unique" : "", i.partial ? "partial" : ""].filter { !$0.isEmpty }.joined(separator: " "),
                     i.entries.formatted(), "\(i.countLevels)"]
                }
                printTable(["index", "components", "kind", "entries", "count levels"], rows, rightAligned: [3, 4])
            }
            Output.line("")
            var trees = [Self.treeRow("records", entity.tree)]
            for i in entity.indexes {
                trees.append(Self.treeRow("index \(i.name)", i.tree))
                trees.append(Self.treeRow("counts \(i.name)", i.counts))
            }
            printTable(["tree", "entries", "depth", "pages", "size"], trees, rightAligned: [1, 2, 3, 4])
        }
        let j = report.journal
        Output.line("\nJournal: commits \(j.firstSequence)…\(j.lastSequence), \(j.commitsRetained.formatted()) commits and "
            + "\(j.entriesRetained.formatted()) entries retained, \(j.tree.pages.formatted()) pages (\(readableSize(j.tree.bytes)))")
        if let start = report.recordImagesStart { Output.line("  entries carry records from commit \(start) on") }
        for c in j.cursors { Output.line("  cursor \(c.name) at \(c.sequence) (\(c.lag) behind)") }
    }

    static func treeRow(_ name: String, _ tree: StoreInspection.Tree) -> [String] {
        [name, tree.entries.formatted(), "\(tree.depth)", tree.pages.formatted(), readableSize(tree.bytes)]
    }
}

/// Prints an aligned table indented by two spaces.
func printTable(_ header: [String], _ rows: [[String]], rightAligned: Set<Int> = []) {
    let all = [header] + rows
    let widths = header.indices.map { c in all.map { $0[c].count }.max() ?? 0 }
    for row in all {
        let cells = row.enumerated().map { c, text in
            let pad = String(repeating: " ", count: widths[c] - text.count)
            return rightAligned.contains(c) ? pad + text : text + pad
        }
        Output.line("  " + cells.joined(separator: "  "))
    }
}
