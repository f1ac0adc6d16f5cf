import ArgumentParser
import Feedstore
import Foundation

struct DumpCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dump",
        abstract: "Print records in primary-key order, or in an index's order.",
        discussion: """
        --prefix takes the leading key components a record must have; --from and --to take the
        components after the prefix (after nothing without a prefix), both inclusive, in the
        index's order. Values are JSON: numbers, strings (dates as ISO 8601, UUIDs as strings).
        Examples:
          storectl dump ./demo-store --entity Message --limit 5
          storectl dump ./demo-store --entity Message --index byFolderDate --prefix '[1]' --limit 10 --jsonl
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

    @Flag(help: "One JSON object per line: {\"id\", \"key\" (with --index), \"record\"}.")
    var jsonl = false

    func run() throws {
        try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { store in
            let entityInfo = try StoreAccess.entity(entity, in: store)
            if let index { _ = StoreAccess.index(index, of: entityInfo) }
            let range = keys.range(of: entityInfo, index: index)
            let entries = try store.read { tx in
                try tx.entries(entity: entity, index: index, range: range, reverse: reverse, offset: offset, limit: limit)
            }
            for entry in entries {
                if jsonl {
                    var line: [String: FieldValue] = ["id": entry.id, "record": .object(entry.record)]
                    if index != nil { line["key"] = .array(entry.key) }
                    StoreAccess.write(FieldValue.object(line).jsonText)
                } else {
                    let key = index == nil ? "" : "  " + FieldValue.array(entry.key).jsonText
                    StoreAccess.write("\(entry.id.jsonText)\(key)  \(FieldValue.object(entry.record).jsonText)")
                }
            }
        }
    }
}
