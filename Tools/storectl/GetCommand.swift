import ArgumentParser
import Feedstore
import Foundation

struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print one record by primary key.",
        discussion: """
        The id is JSON when it parses as JSON (42, -7, "a b"), else taken as a string. An id of \
        the wrong kind for the entity's keys (a string for integer keys) is an error. A record \
        that is not there exits with status 3.

        Examples:
          storectl get ./demo-store --entity Message 42
          storectl get ./demo-store --entity Contact 7 --format json
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    @Option(help: "The entity.")
    var entity: String

    // An array that takes unrecognized words, so that a negative key (-1) is an id, not an option.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The primary key.", valueName: "id"))
    var id: [String] = []

    @OptionGroup var output: FormatOption

    @Flag(help: "The same as --format json: {\"id\", \"record\"} on one line.")
    var json = false

    /// The words given for the id, without a `--` that ends the options.
    private var idWords: [String] { id.filter { $0 != "--" } }

    func validate() throws {
        let words = idWords
        guard words.count == 1 else {
            throw ValidationError(words.isEmpty ? "Missing expected argument '<id>'" : "Give one id; got \(words.count): \(words.joined(separator: " "))")
        }
    }

    func run() throws {
        let format = json ? .json : output.chosen
        try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { store in
            let info = try StoreAccess.entity(entity, in: store)
            let word = idWords[0]
            let given = (try? FieldValue(jsonText: word)) ?? .string(word)
            let key: FieldValue
            do {
                key = try info.primaryKeyComponent(given)
            } catch {
                StoreAccess.fail("\(entity) keys are stored as \(info.primaryKeyKind); \(given.jsonText) is not one")
            }
            switch format {
            case .text, .json, .jsonl:
                // Written straight from the stored bytes.
                guard let record = try store.read({ try $0.recordJSON(entity: entity, id: key) }) else { Self.notFound(entity, key) }
                Output.line(format == .text ? record : "{\"id\":\(key.jsonText),\"record\":\(record)}")
            case .csv, .table:
                guard let record = try store.read({ try $0.record(entity: entity, id: key) }) else { Self.notFound(entity, key) }
                let columns = ["id"] + info.fields.map(\.name).filter { $0 != "id" }
                let printer = RowPrinter(format: format, columns: columns)
                printer.row(columns.map { Cell(record[$0] ?? .null) })
                printer.finish()
            }
        }
    }

    static func notFound(_ entity: String, _ key: FieldValue) -> Never {
        StoreAccess.fail("\(entity) \(key.jsonText) not found", status: StoreAccess.notFoundStatus)
    }
}
