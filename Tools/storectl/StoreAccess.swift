import ArgumentParser
import Feedstore
import Foundation

/// Opening stores for commands that only read, and clear failures with a non-zero exit status.
/// Statuses: 0 ok, 1 `verify` found problems, 2 an error (bad input, a missing or damaged
/// store), 3 `get` found no such record. Store errors thrown by any command reach
/// `Storectl.main`, which reports them the same way.
enum StoreAccess {
    static func withReadOnlyStore<R>(_ path: String, immutable: Bool = false, verifyPages: Bool = false,
                                     _ body: (Store) throws -> R) throws -> R
    {
        var options = StoreOptions(readOnly: true)
        options.immutable = immutable
        options.verifyPagesOnOpen = verifyPages
        let store = try Store(path: path, options: options)
        defer { store.close() }
        return try body(store)
    }

    /// The status of an error.
    static let errorStatus: Int32 = 2
    /// The status of `get` for a record that is not there.
    static let notFoundStatus: Int32 = 3

    static func fail(_ message: String, status: Int32 = errorStatus) -> Never {
        Output.flush()
        Output.diagnostic("storectl: \(message)\n")
        exit(status)
    }

    /// The catalog entry of `name`, or a clear failure listing the entities there are.
    static func entity(_ name: String, in store: Store) throws -> CatalogEntity {
        let catalog = try store.catalog
        guard let entity = catalog.entities[name] else {
            fail("no entity named \(name) in this store (entities: \(catalog.entities.keys.sorted().joined(separator: ", ")))")
        }
        return entity
    }

    /// The index `name` of `entity`, or a clear failure listing the indexes there are.
    static func index(_ name: String, of entity: CatalogEntity) -> IndexDefinition {
        guard let index = entity.index(named: name) else {
            fail("entity \(entity.name) has no index named \(name) (indexes: \(entity.indexes.map(\.definition.name).joined(separator: ", ")))")
        }
        return index.definition
    }

    /// A JSON array of key components given on the command line.
    static func components(_ json: String?, option: String) -> [FieldValue]? {
        guard let json else { return nil }
        guard let value = try? FieldValue(jsonText: json), case let .array(items) = value else {
            fail("\(option) takes a JSON array of key components, such as [1] or [1, \"2026-01-01T00:00:00Z\"]; got \(json)")
        }
        return items
    }

}

/// `--immutable`, for commands that only read.
struct ImmutableOption: ParsableArguments {
    @Flag(help: """
        Open without the lock file, needing no write access: for a store no process writes (read-only media, \
        another user's files). If a process does write it meanwhile, reads may see damaged data.
        """)
    var immutable = false
}
