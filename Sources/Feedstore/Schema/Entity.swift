import Foundation

/// A record type kept in a store: a `Codable` value type with a primary key and declared indexes.
///
/// ```swift
/// struct Message: Entity {
///     var id: UInt64
///     var folder: Int64
///     var date: Date
///     var isRead: Bool
///     static let indexes: [IndexDefinition] = [
///         IndexDefinition("byFolderDate", [.ascending("folder"), .descending("date")]),
///         IndexDefinition("unreadByDate", [.descending("date")], where: .field("isRead") == false),
///     ]
/// }
/// ```
///
/// Records are stored by their encoded fields (names from `CodingKeys`), so index components and
/// conditions name fields as the record encodes them. Records are plain values: reading returns
/// copies, never live objects. They are decoded straight from the store's mapped bytes, so a
/// custom `init(from:)` must not keep the decoder or its containers after it returns. Entities are
/// `Identifiable` by their primary key, so SwiftUI's `List` and `ForEach` take them as they are.
public protocol Entity: Codable, Sendable, Identifiable where ID: PrimaryKey {
    /// The primary key. Two records of one entity never share it.
    var id: ID { get }
    /// The name the catalog stores the entity under. Defaults to the type's name.
    static var entityName: String { get }
    /// The secondary indexes. Adding one builds it when the store opens; removing one drops it.
    static var indexes: [IndexDefinition] { get }
    /// The field names that indexes, their conditions and watch options may name (nested fields
    /// dotted, `"tags.*"` for any member of `tags`). By default (nil) they are learned from the
    /// type's `Decodable` conformance; declare them when a custom `init(from:)` does not read
    /// every field the type encodes, or cannot be run with made-up values.
    static var fieldNames: [String]? { get }
}

extension Entity {
    /// The type's name, as `String(describing:)` writes it.
    public static var entityName: String { TypeNames.name(of: Self.self) }
    /// No secondary indexes.
    public static var indexes: [IndexDefinition] { [] }
    /// Learned from the type's decoder.
    public static var fieldNames: [String]? { nil }
}

/// The names of types, each described once: every typed read names its entity, and describing
/// a type (through reflection) costs more than reading a record.
enum TypeNames {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var names: [ObjectIdentifier: String] = [:]

    static func name<T>(of type: T.Type) -> String {
        let key = ObjectIdentifier(type)
        if let name = lock.withLock({ names[key] }) { return name }
        let name = String(describing: type)
        lock.withLock { names[key] = name }
        return name
    }
}
