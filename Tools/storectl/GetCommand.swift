import ArgumentParser
import Feedstore
import Foundation

struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print records by primary key.",
        discussion: """
        Each id is JSON when it parses as JSON (42, -7, "a b"), else taken as a string. An id of \
        the wrong kind for the entity's keys (a string for integer keys) is an error. The records \
        print in the order of the ids, read in one snapshot; with several ids, --format json \
        prints an array. An id with no record is named on standard error, and the command then \
        exits with status 3 after printing the others.

        Examples:
          storectl get ./demo-store --entity Message 42
          storectl get ./demo-store --entity Message 42 43 44 --format table
          storectl get ./demo-store --entity Contact 7 --format json
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    @Option(help: "The entity.")
    var entity: String

    // An array that takes unrecognized words, so that a negative key (-1) is an id, not an option.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The primary keys.", valueName: "id"))
    var id: [String] = []

    @OptionGroup var output: FormatOption

    /// The words given for the ids, without a `--` that ends the options.
    private var idWords: [String] { id.filter { $0 != "--" } }

    func validate() throws {
        if idWords.isEmpty { throw ValidationError("Missing expected argument '<id> ...'") }
    }

    func run() throws {
        let format = output.chosen
        try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { store in
            let info = try StoreAccess.entity(entity, in: store)
            let keys = idWords.map { word in
                let given = (try? FieldValue(jsonText: word)) ?? .string(word)
                do {
                    return try info.primaryKeyComponent(given)
                } catch let FeedstoreError.invalidRange(_, _, reason) {
                    StoreAccess.fail("\(entity) \(reason)")
                } catch {
                    StoreAccess.fail("\(error)")
                }
            }
            var missing: [FieldValue] = []
            try store.read { tx in
                switch format {
                case .text, .json, .jsonl:
                    // Written straight from the stored bytes; one id in JSON is one object, as before.
                    let array = format == .json && keys.count > 1
                    var printed = 0
                    for key in keys {
                        guard let record = try tx.recordJSON(entity: entity, id: key) else {
                            missing.append(key)
                            continue
                        }
                        let line = format == .text ? record : "{\"id\":\(key.jsonText),\"record\":\(record)}"
                        Output.line(array ? (printed == 0 ? "[" : ",") + line : line)
                        printed += 1
                    }
                    if array { Output.line(printed == 0 ? "[]" : "]") }
                case .csv, .table:
                    let columns = ["id"] + info.fields.map(\.name).filter { $0 != "id" }
                    let printer = RowPrinter(format: format, columns: columns)
                    for key in keys {
                        guard let record = try tx.record(entity: entity, id: key) else {
                            missing.append(key)
                            continue
                        }
                        printer.row(columns.map { Cell(record[$0] ?? .null) })
                    }
                    printer.finish()
                }
            }
            if !missing.isEmpty {
                let names = missing.map(\.jsonText).joined(separator: ", ")
                StoreAccess.fail("\(entity) \(names) not found", status: StoreAccess.notFoundStatus)
            }
        }
    }
}
