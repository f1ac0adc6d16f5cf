import Foundation

/// One change to one record by entity name and primary key, without the application's types,
/// with an optional precondition: the unit of a write a replica forwards to its primary, which
/// the primary applies with `WriteTransaction.apply(_:)` exactly as a local write by name.
public struct RecordWrite: Sendable, Hashable, Codable {
    /// What the write does.
    public enum Action: Sendable, Hashable, Codable {
        /// Adds the record; ``FeedstoreError/recordExists(entity:id:)`` when the id is taken.
        case insert(fields: [String: FieldValue])
        /// Adds the record or replaces the one with the same id.
        case put(fields: [String: FieldValue])
        /// Removes the record, if there is one.
        case delete
    }

    /// What must hold of the record before the write, checked in the write's transaction.
    public enum Precondition: Sendable, Hashable, Codable {
        /// No record has the id.
        case absent
        /// A record has the id and holds exactly these fields (compared as a write by name
        /// would store them: converted to the entity's kinds, nulls dropped): compare-and-set.
        case equals([String: FieldValue])
    }

    /// The entity's name.
    public var entity: String
    /// The record's primary key.
    public var id: FieldValue
    /// What the write does.
    public var action: Action
    /// What must hold first; nil for nothing.
    public var precondition: Precondition?

    /// A write of `action` to the record `id` of `entity`, if `precondition` holds.
    public init(entity: String, id: FieldValue, action: Action, precondition: Precondition? = nil) {
        self.entity = entity
        self.id = id
        self.action = action
        self.precondition = precondition
    }

    /// Inserts the record with `id` and `fields`.
    public static func insert(entity: String, id: FieldValue, fields: [String: FieldValue]) -> RecordWrite {
        RecordWrite(entity: entity, id: id, action: .insert(fields: fields))
    }

    /// Inserts or replaces the record with `id`, if `precondition` holds.
    public static func put(entity: String, id: FieldValue, fields: [String: FieldValue], if precondition: Precondition? = nil) -> RecordWrite {
        RecordWrite(entity: entity, id: id, action: .put(fields: fields), precondition: precondition)
    }

    /// Deletes the record with `id`, if `precondition` holds.
    public static func delete(entity: String, id: FieldValue, if precondition: Precondition? = nil) -> RecordWrite {
        RecordWrite(entity: entity, id: id, action: .delete, precondition: precondition)
    }

    /// Inserts `record`, read through its `Codable` conformance.
    public static func insert<E: Entity>(_ record: E) throws -> RecordWrite {
        RecordWrite(entity: E.entityName, id: record.id.fieldValue, action: .insert(fields: try fields(of: record)))
    }

    /// Inserts or replaces `record`, if `precondition` holds.
    public static func put<E: Entity>(_ record: E, if precondition: Precondition? = nil) throws -> RecordWrite {
        RecordWrite(entity: E.entityName, id: record.id.fieldValue, action: .put(fields: try fields(of: record)), precondition: precondition)
    }

    /// Deletes the record of `type` with `id`, if `precondition` holds.
    public static func delete<E: Entity>(_ type: E.Type, id: E.ID, if precondition: Precondition? = nil) -> RecordWrite {
        RecordWrite(entity: E.entityName, id: id.fieldValue, action: .delete, precondition: precondition)
    }

    /// `record`'s fields by name, as its `Codable` conformance writes them.
    public static func fields<E: Entity>(of record: E) throws -> [String: FieldValue] {
        guard case let .object(fields) = try FieldValueEncoder.encode(record) else {
            throw FeedstoreError.encodingFailed(entity: E.entityName, reason: "the record does not encode as an object of fields")
        }
        return fields
    }
}

extension WriteTransaction {
    /// Applies `write`: checks its precondition, then inserts, puts or deletes by name.
    /// - Throws: ``FeedstoreError/preconditionFailed(entity:id:reason:)``; the errors of
    ///   ``insert(entity:id:fields:keepingUndeclaredFields:)``,
    ///   ``put(entity:id:fields:keepingUndeclaredFields:)`` and ``delete(entity:id:)``. A write
    ///   that throws leaves the record as it was.
    /// - Complexity: O(i log n) for i indexes over n records.
    public func apply(_ write: RecordWrite) throws {
        if let precondition = write.precondition { try check(precondition, of: write) }
        switch write.action {
        case let .insert(fields): try insert(entity: write.entity, id: write.id, fields: fields)
        case let .put(fields): try put(entity: write.entity, id: write.id, fields: fields)
        case .delete: try delete(entity: write.entity, id: write.id)
        }
    }

    /// Applies each of `writes` in order; one that throws leaves the transaction's body to
    /// throw, so that none of them is written.
    public func apply(_ writes: [RecordWrite]) throws {
        for write in writes { try apply(write) }
    }

    private func check(_ precondition: RecordWrite.Precondition, of write: RecordWrite) throws {
        let id = try entity(write.entity).catalog.primaryKeyComponent(write.id)
        let stored = try record(entity: write.entity, id: id)
        switch precondition {
        case .absent:
            guard stored == nil else {
                throw FeedstoreError.preconditionFailed(entity: write.entity, id: id, reason: "the record exists, and the write required it absent")
            }
        case let .equals(expected):
            guard let stored else {
                throw FeedstoreError.preconditionFailed(entity: write.entity, id: id, reason: "the record does not exist, and the write required it to hold the value given")
            }
            let (_, _, conformed) = try conforming(expected, entity: write.entity, id: id, keepingUndeclaredFields: true)
            guard conformed == stored else {
                let differing = Set(conformed.keys).union(stored.keys).filter { conformed[$0] != stored[$0] }.sorted()
                throw FeedstoreError.preconditionFailed(entity: write.entity, id: id,
                                                        reason: "the record differs from the value the write required (fields \(differing.joined(separator: ", ")))")
            }
        }
    }
}
