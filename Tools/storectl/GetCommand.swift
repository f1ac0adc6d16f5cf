import ArgumentParser
import Feedstore
import Foundation

struct GetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print one record by primary key.",
        discussion: """
        The id is JSON when it parses as JSON (42, "a b"), else taken as a string.
        Examples:
          storectl get ./demo-store --entity Message 42
          storectl get ./demo-store --entity Contact 7 --json
        """
    )

    @Argument(help: "The store directory.")
    var path: String

    @OptionGroup var access: ImmutableOption

    @Option(help: "The entity.")
    var entity: String

    @Argument(help: "The primary key.")
    var id: String

    @Flag(help: "Print {\"id\", \"record\"} as one line of JSON.")
    var json = false

    func run() throws {
        try StoreAccess.withReadOnlyStore(path, immutable: access.immutable) { store in
            let info = try StoreAccess.entity(entity, in: store)
            let key = info.coercePrimaryKey((try? FieldValue(jsonText: id)) ?? .string(id))
            // Written straight from the stored bytes.
            guard let record = try store.read({ try $0.recordJSON(entity: entity, id: key) }) else {
                StoreAccess.fail("\(entity) \(key.jsonText) not found")
            }
            StoreAccess.write(json ? "{\"id\":\(key.jsonText),\"record\":\(record)}" : record)
        }
    }
}
