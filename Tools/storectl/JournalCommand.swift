import ArgumentParser
@_spi(Replication) import Feedstore
import Foundation

struct JournalCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journal",
        abstract: "Print journal entries: one line per changed record, with its commit's sequence and time.",
        discussion: """
        Entries are read one at a time, so memory stays the same however long the journal. \
        Commits print oldest first, each commit's entries in the order they were written. \
        --tail N prints the newest N commits, as tail does; with --follow it then prints the \
        commits that follow, as tail -f does. --limit N stops after N commits. --keys adds each \
        entry's index keys before and after the change.

        Examples:
          storectl journal ./demo-store --after 100 --limit 20
          storectl journal ./demo-store --tail 5 --keys
          storectl journal ./demo-store --follow --format jsonl
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    @Option(help: "Print commits after this sequence (default: from the oldest retained).")
    var after: UInt64?

    @Option(help: "Print the newest N commits (oldest first, as tail does).")
    var tail: Int?

    @Option(help: "Most commits to print (then stop, also with --follow).")
    var limit: Int?

    @Flag(help: "Keep printing new commits as they come (stop with Ctrl-C).")
    var follow = false

    @Flag(help: "Show each entry's index keys before and after the change.")
    var keys = false

    @OptionGroup var output: FormatOption

    /// Entries between releases of the pages read.
    static let entriesPerRelease = 1_024

    func validate() throws {
        if let tail, tail < 0 { throw ValidationError("--tail takes a number of commits, 0 or more") }
        if let limit, limit < 0 { throw ValidationError("--limit takes a number of commits, 0 or more") }
        if tail != nil, after != nil { throw ValidationError("--tail and --after both choose where to start; give one") }
        // A JSON array ends, and a table sizes its columns, only once the output is complete.
        if follow, [.json, .table].contains(output.chosen) {
            throw ValidationError("--follow prints commits as they come; use --format text, csv or jsonl with it")
        }
    }

    func run() throws {
        let format = output.chosen
        let printer = format == .text ? nil : RowPrinter(format: format, columns: Self.columns(keys: keys))
        defer { printer?.finish() }
        var printedEntries = 0
        var printedCommits = 0
        var lastSequence: UInt64?
        /// Prints an entry; false, printing nothing, once it would begin a commit past --limit.
        func show(_ entry: JournalEntry, _ time: Date) -> Bool {
            if entry.sequence != lastSequence {
                if let limit, printedCommits >= limit { return false }
                printedCommits += 1
                lastSequence = entry.sequence
            }
            if let printer {
                printer.row(Self.cells(entry, time: time, keys: keys))
            } else {
                for line in Self.lines(entry, time: time, keys: keys) { Output.line(line) }
            }
            printedEntries += 1
            return true
        }
        try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { store in
            var position = try after ?? store.read { tx in max(try tx.journalBounds().first, 1) - 1 }
            // Nothing follows a sequence past the journal's end: say where it ends, rather than
            // print nothing as if the journal were empty there.
            let bounds = try store.read { try $0.journalBounds() }
            if let after, !follow, after > bounds.last {
                Output.diagnostic("storectl: " + (bounds.last >= bounds.first
                    ? "the journal ends at commit \(bounds.last) (it holds commits \(bounds.first)…\(bounds.last)); nothing follows commit \(after)\n"
                    : "the journal holds no commit (the next is \(bounds.last + 1)); nothing follows commit \(after)\n"))
            }
            if let tail {
                // The newest N commits, printed from the oldest of them as the walk below does.
                let newest = try store.read { try $0.journal(newest: tail) }
                guard let oldest = newest.last else {
                    guard follow else { return }
                    position = try store.read { try $0.journalBounds().last }
                    return try printCommits(after: position, store: store, show: show)
                }
                position = oldest.sequence - 1
            }
            try printCommits(after: position, store: store, show: show)
        }
    }

    /// Prints every commit after `position`, and with --follow the commits that come later.
    private func printCommits(after start: UInt64, store: Store, show: (JournalEntry, Date) -> Bool) throws {
        var position = start
        var shown = 0
        while true {
            var stopped = false
            let (finished, head) = try store.read { tx in
                (try tx.forEachJournalEntry(after: position) { entry, time in
                    guard show(entry, time) else {
                        stopped = true
                        return false
                    }
                    shown += 1
                    // Pages read stay resident (and counted in RSS) until released.
                    if shown % Self.entriesPerRelease == 0 { try store.releaseMappedPages() }
                    return true
                }, try tx.journalBounds().last)
            }
            if stopped { return }
            if finished > position {
                position = finished
                continue
            }
            guard follow else { return }
            // Commits of the same snapshot past the last entry shown hold no entry: passed, so
            // that the wait below waits for a later one.
            if head > position {
                position = head
                continue
            }
            Output.flush()
            // Woken by the next commit, whichever process makes it (the store's commit signal).
            _ = store.waitForCommit(after: position, timeout: 60)
        }
    }

    static func columns(keys: Bool) -> [String] {
        ["sequence", "time", "entity", "id", "kind", "changedFields"] + (keys ? ["indexes"] : [])
    }

    static func cells(_ entry: JournalEntry, time: Date, keys: Bool) -> [Cell] {
        var cells = [Cell(.uint(entry.sequence)), Cell(.date(time)), Cell(.string(entry.entity)), Cell(entry.id),
                     Cell(.string(entry.kind.rawValue)), Cell(.array(entry.changedFields.map { .string($0) }))]
        if keys {
            cells.append(Cell(.array(entry.indexChanges.map { change in
                .object(["index": .string(change.index), "before": keyValue(change.before), "after": keyValue(change.after)])
            })))
        }
        return cells
    }

    /// The readable lines of an entry: the change, then with --keys one line per index.
    static func lines(_ entry: JournalEntry, time: Date, keys: Bool) -> [String] {
        let fields = entry.changedFields.isEmpty ? "" : " (\(entry.changedFields.joined(separator: ", ")))"
        let kind = entry.kind.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0)
        var lines = ["\(entry.sequence)  \(Cell(.date(time)).plain)  \(kind)  \(entry.entity) \(entry.id.jsonText)\(fields)"]
        if keys {
            for change in entry.indexChanges {
                lines.append("    \(change.index): \(keyValue(change.before).jsonText) → \(keyValue(change.after).jsonText)")
            }
        }
        return lines
    }

    /// An index key as its components (the primary key last), or null for none.
    static func keyValue(_ key: IndexKey?) -> FieldValue {
        guard let key else { return .null }
        return (try? key.components()).map { .array($0) } ?? .null
    }
}
