import ArgumentParser
import Feedstore
import Foundation

struct CountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "count",
        abstract: "Print how many records an entity has, or how many entries of an index lie in a range.",
        discussion: """
        Counts come from LMDB's statistics (a whole entity) or from the index's counted tree (a \
        range), so they take microseconds on any size of store. A range needs --index: the \
        primary-key order has no counts. With --format json, the count prints as one object \
        {"entity", "index", "count"}; with jsonl, table or csv, as a row of entity, index and count.

        Examples:
          storectl count ./demo-store --entity Message
          storectl count ./demo-store --entity Message --index byFolderDate \\
            --prefix '[1]'
          storectl count ./demo-store --entity Message --index byFolderDate \\
            --prefix '[1]' --from '["2025-06-01T00:00:00Z"]'
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    @Option(help: "The entity to count.")
    var entity: String

    @Option(help: "The index whose entries to count (required with a range).")
    var index: String?

    @OptionGroup var keys: RangeOptions

    @OptionGroup var output: FormatOption

    func run() throws {
        try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { store in
            let entityInfo = try StoreAccess.entity(entity, in: store)
            guard let index else {
                if keys.isGiven {
                    StoreAccess.fail("--prefix, --from, --to, --filter and --search need --index: the primary-key order has no counts "
                        + "(every entity has the index \"id\", its records in primary-key order)")
                }
                show(try store.read { try $0.count(entity: entity) })
                return
            }
            _ = StoreAccess.index(index, of: entityInfo)
            let (range, filter) = keys.query(of: entityInfo, index: index)
            show(try store.read { try $0.count(entity: entity, index: index, range: range, filter: filter) })
        }
    }

    private func show(_ count: Int) {
        switch output.chosen {
        case .text: return Output.line(String(count))
        // One count is one object, not an array of one.
        case .json: return Output.line(FieldValue.object(["entity": .string(entity), "index": index.map { .string($0) } ?? .null,
                                                          "count": .int(Int64(count))]).jsonText)
        default: break
        }
        let printer = RowPrinter(format: output.chosen, columns: ["entity", "index", "count"])
        printer.row([Cell(.string(entity)), Cell(index.map { .string($0) } ?? .null), Cell(.int(Int64(count)))])
        printer.finish()
    }
}
