import ArgumentParser
import Feedstore
import Foundation

struct InspectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a store's environment, entities, indexes and journal, without scanning data.",
        discussion: """
        Reads LMDB's statistics and the counted indexes only, so it is fast on any size of store.
        Examples:
          storectl inspect ./demo-store
          storectl inspect ./demo-store --json | jq .journal.lastSequence
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    @Flag(help: "Print JSON (stable keys, documented in the README).")
    var json = false

    func run() throws {
        let report = try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { try $0.inspect() }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            StoreAccess.write(String(decoding: try encoder.encode(report), as: UTF8.self))
            return
        }
        let e = report.environment
        print("Store \(report.path) (format \(report.formatVersion))")
        print("  map        \(e.mapSize.formatted()) bytes, \(e.pagesUsed.formatted()) of \((e.mapSize / e.pageSize).formatted()) pages of \(e.pageSize) bytes used")
        print("  last txn   \(e.lastTransactionID.formatted())")
        print("  readers    \(e.readersUsed) of \(e.maxReaders) slots")
        for line in e.readers { print("    \(line)") }
        for entity in report.entities {
            print("\nEntity \(entity.name) (key: \(entity.primaryKeyKind))")
            print("  records    \(entity.records.formatted())   depth \(entity.depth)   pages \(entity.pages.formatted())")
            print("  fields     " + entity.fields.map { "\($0[0]): \($0[1])" }.joined(separator: ", "))
            guard !entity.indexes.isEmpty else { continue }
            let rows = entity.indexes.map { i in
                [i.name, i.components.joined(separator: ", "), (i.unique ? "unique " : "") + (i.partial ? "partial" : ""),
                 i.entries.formatted(), "\(i.depth)", i.pages.formatted(), "\(i.countLevels)"]
            }
            printTable(["index", "components", "kind", "entries", "depth", "pages", "count levels"], rows, rightAligned: [3, 4, 5, 6])
        }
        let j = report.journal
        print("\nJournal: commits \(j.firstSequence)…\(j.lastSequence), \(j.commitsRetained.formatted()) commits and \(j.entriesRetained.formatted()) entries retained")
        for c in j.cursors { print("  cursor \(c.name) at \(c.sequence) (\(c.lag) behind)") }
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
        print("  " + cells.joined(separator: "  "))
    }
}
