import ArgumentParser
import Feedstore
import Foundation

struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print records in primary-key order, or in an index's order.",
        discussion: """
        --prefix takes the leading key components a record must have; --from and --to take the \
        components after the prefix (after nothing without a prefix), both inclusive, in the \
        index's order. Values are JSON: numbers, strings (dates as ISO 8601, UUIDs as strings). \
        Records stream out as they are read, so memory stays the same whatever the store's size. \
        --offset skips through an index's counts; in primary-key order, which has no counts, the \
        skipped records are walked. --filter keeps the records that meet a condition (JSON; see \
        its help); --offset and --limit then count those records. --search finds the records that \
        have every word of a text through a text index (--index), newest first if that is its order.

        Examples:
          storectl dump ./demo-store --entity Message --limit 5
          storectl dump ./demo-store --entity Message --index byFolderDate \\
            --prefix '[1]' --limit 10 --format table
          storectl dump ./demo-store --entity Message --index byFolderDate \\
            --filter '{"field": "title", "contains": "report"}' --limit 5
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    @Option(help: "The entity to dump.")
    var entity: String

    @Option(help: "An index to follow instead of the primary key.")
    var index: String?

    @OptionGroup var keys: RangeOptions

    @Flag(help: "Walk the order backwards.")
    var reverse = false

    @Option(help: "Records to skip.")
    var offset: Int = 0

    @Option(help: "Most records to print.")
    var limit: Int?

    @OptionGroup var output: FormatOption

    /// Records between releases of the pages read.
    static let recordsPerRelease = 1_024

    func run() throws {
        let format = output.chosen
        try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { store in
            let entityInfo = try StoreAccess.entity(entity, in: store)
            if let index { _ = StoreAccess.index(index, of: entityInfo) }
            let (range, filter) = keys.query(of: entityInfo, index: index)
            let fields = ["id"] + entityInfo.fields.map(\.name).filter { $0 != "id" }
            let printer: RowPrinter? = switch format {
            case .text: nil
            case .jsonl, .json: RowPrinter(format: format, columns: ["id"] + (index == nil ? [] : ["key"]) + ["record"])
            case .csv, .table: RowPrinter(format: format, columns: (index == nil ? [] : ["key"]) + fields)
            }
            var visited = 0
            // An index skips to the offset through its counts; the primary-key order has none, so
            // the records before the offset are walked here, releasing their pages as they pass.
            let walkedOffset = index == nil && filter == nil ? offset : 0
            try store.read { tx in
                try tx.forEachEntry(entity: entity, index: index, range: range, reverse: reverse, offset: offset - walkedOffset,
                                    limit: limit.flatMap { $0 <= Int.max - walkedOffset ? $0 + walkedOffset : nil }, filter: filter) { entry in
                    // Pages read stay resident (and counted in RSS) until released.
                    visited += 1
                    if visited % Self.recordsPerRelease == 0 { try store.releaseMappedPages() }
                    if visited <= walkedOffset { return }
                    let id = try entry.id()
                    let key: FieldValue? = index == nil ? nil : .array(try entry.key())
                    guard let printer else {
                        Output.line("\(id.jsonText)\(key.map { "  " + $0.jsonText } ?? "")  \(try entry.recordJSON())")
                        return
                    }
                    if printer.format == .csv || printer.format == .table {
                        printer.row((key.map { [Cell($0)] } ?? []) + (try entry.values(of: fields)).map(Cell.init))
                    } else {
                        printer.row([Cell(id)] + (key.map { [Cell($0)] } ?? []) + [Cell(json: try entry.recordJSON())])
                    }
                }
            }
            printer?.finish()
        }
    }
}
