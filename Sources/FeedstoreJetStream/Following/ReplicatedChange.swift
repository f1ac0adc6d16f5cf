@_spi(Replication) import Feedstore

/// One record change of an origin's commit, as a replica applies it.
@_spi(Benchmarking) public struct ReplicatedChange: Sendable {
    /// A record as an envelope carries it.
    public enum Record: Sendable, Equatable {
        /// The origin's stored encoding (the envelope's `stored`): exact, every value of its
        /// own kind, stored as it is.
        case stored(ShippedRecord)
        /// Fields read from the envelope's JSON `after`, held to the catalog.
        case fields([String: FieldValue])

        /// The record's fields by name.
        func fields() throws -> [String: FieldValue] {
            switch self {
            case let .stored(record): try record.fields()
            case let .fields(fields): fields
            }
        }
    }

    public var entity: String
    public var id: FieldValue
    /// Nil for a delete.
    public var record: Record?
}

extension WriteTransaction {
    /// Applies one change of an origin's commit as a replica stores it: no record deletes it; an
    /// exact record goes in as it is, the origin having held it to its types; one read from JSON
    /// is held to the catalog, keeping the fields the origin kept.
    @_spi(Benchmarking) public func applyReplicated(_ change: ReplicatedChange) throws {
        switch change.record {
        case nil: _ = try delete(entity: change.entity, id: change.id)
        case let .stored(record)?: try put(entity: change.entity, id: change.id, stored: record)
        case let .fields(fields)?: try put(entity: change.entity, id: change.id, fields: fields, keepingUndeclaredFields: true)
        }
    }
}
