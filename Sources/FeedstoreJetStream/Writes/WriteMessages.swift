import Feedstore
import Foundation

/// The messages of a forwarded write, as JSON: a replica's request and the primary's reply.
/// `FieldValue`s keep their exact kinds (`{"int": 5}`), so the primary checks the values the
/// application gave, not what JSON made of them.
enum WriteMessages {
    /// The subject a stream's primary answers write requests on. Stream names hold no dots, so
    /// it is one token after the prefix; NATS permissions can allow it apart from the stream's.
    static func subject(stream: String) -> String { "feedstore-writes.\(stream)" }

    /// A replica's request: its id, the same on every retry, and the writes of one transaction.
    struct Request: Codable {
        var id: String
        var writes: [RecordWrite]
    }

    /// The primary's answer.
    enum Reply: Codable {
        /// In the stream as commit `sequence` (the newest commit, when the writes changed
        /// nothing); `repeated` when the request had been applied before.
        case applied(sequence: UInt64, repeated: Bool)
        /// Refused as a local write would be; nothing was written.
        case refused(Refusal)
        /// Not applied, for a reason that is not the request's: the primary could not (its disk
        /// is full), or another store was promoted in its place (`retry`: the new primary may
        /// answer the same request).
        case notApplied(reason: String, retry: Bool)
    }

    /// The refusals of a write by name, carried as they are so that the replica throws the
    /// same ``FeedstoreError`` as a local write.
    enum Refusal: Codable {
        case uniqueViolation(entity: String, index: String, key: [FieldValue], existingID: FieldValue)
        case recordExists(entity: String, id: FieldValue)
        case recordNotFound(entity: String, id: FieldValue)
        case unknownEntity(String)
        case recordRefused(entity: String, id: FieldValue, field: String, reason: FieldRefusal)
        case preconditionFailed(entity: String, id: FieldValue, reason: String)
        case keyTooLarge(entity: String, index: String?, size: Int, limit: Int)
        case invalidRange(entity: String, index: String, reason: String)
        case encodingFailed(entity: String, reason: String)

        /// The refusal `error` is, or nil for an error that is not the request's doing.
        init?(_ error: any Error) {
            guard let error = error as? FeedstoreError else { return nil }
            switch error {
            case let .uniqueViolation(entity, index, key, existingID): self = .uniqueViolation(entity: entity, index: index, key: key, existingID: existingID)
            case let .recordExists(entity, id): self = .recordExists(entity: entity, id: id)
            case let .recordNotFound(entity, id): self = .recordNotFound(entity: entity, id: id)
            case let .unknownEntity(name): self = .unknownEntity(name)
            case let .recordRefused(entity, id, field, reason): self = .recordRefused(entity: entity, id: id, field: field, reason: reason)
            case let .preconditionFailed(entity, id, reason): self = .preconditionFailed(entity: entity, id: id, reason: reason)
            case let .keyTooLarge(entity, index, size, limit): self = .keyTooLarge(entity: entity, index: index, size: size, limit: limit)
            case let .invalidRange(entity, index, reason): self = .invalidRange(entity: entity, index: index, reason: reason)
            case let .encodingFailed(entity, reason): self = .encodingFailed(entity: entity, reason: reason)
            default: return nil
            }
        }

        /// The error a local write would have thrown.
        var error: FeedstoreError {
            switch self {
            case let .uniqueViolation(entity, index, key, existingID): .uniqueViolation(entity: entity, index: index, key: key, existingID: existingID)
            case let .recordExists(entity, id): .recordExists(entity: entity, id: id)
            case let .recordNotFound(entity, id): .recordNotFound(entity: entity, id: id)
            case let .unknownEntity(name): .unknownEntity(name)
            case let .recordRefused(entity, id, field, reason): .recordRefused(entity: entity, id: id, field: field, reason: reason)
            case let .preconditionFailed(entity, id, reason): .preconditionFailed(entity: entity, id: id, reason: reason)
            case let .keyTooLarge(entity, index, size, limit): .keyTooLarge(entity: entity, index: index, size: size, limit: limit)
            case let .invalidRange(entity, index, reason): .invalidRange(entity: entity, index: index, reason: reason)
            case let .encodingFailed(entity, reason): .encodingFailed(entity: entity, reason: reason)
            }
        }
    }

    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] { [UInt8](try JSONEncoder().encode(value)) }

    static func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws -> T { try JSONDecoder().decode(type, from: Data(bytes)) }
}
