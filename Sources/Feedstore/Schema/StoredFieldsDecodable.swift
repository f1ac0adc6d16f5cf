/// An entity that reads its records straight from their stored fields, without `Codable`'s
/// keyed containers.
///
/// Reading a record through `init(from:)` goes through the standard library's
/// `KeyedDecodingContainer` for every field: a boxed container, generic dispatch and a coding key,
/// about 500 instructions a field. `init(storedFields:)` reads each field with one call, by name,
/// with the same conversions and errors as the `Codable` path, in about half that. Every typed
/// read uses it when the type adopts this protocol: `object(at:)`, windows, scans, watchers'
/// batches.
///
/// ```swift
/// struct Contact: StoredFieldsDecodable {
///     var id: UInt64
///     var name: String
///     var email: String?
///
///     init(storedFields fields: borrowing StoredFields) throws {
///         id = try fields.decode(UInt64.self, "id")
///         name = try fields.decode(String.self, "name")
///         email = try fields.decodeIfPresent(String.self, "email")
///     }
/// }
/// ```
///
/// What it costs: the initializer restates what `Codable` derives, so it must read the fields
/// under the names the type encodes them with, and change when they change. The type stays
/// `Codable`: writes encode through it, and the store learns the type's fields from its
/// `Decodable` conformance, not from this initializer.
public protocol StoredFieldsDecodable: Entity {
    /// Reads a record from its stored fields. `fields` lives only for the call.
    init(storedFields fields: borrowing StoredFields) throws
}
