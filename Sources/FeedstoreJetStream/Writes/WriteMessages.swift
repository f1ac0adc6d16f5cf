@_spi(Replication) import Feedstore
import Foundation

/// The messages of a forwarded write: a replica's request and the primary's reply, each one
/// value in the binary form records are stored in (``FieldValue/storedEncoding``). It keeps every
/// kind exact, so the primary checks the values the application gave; it is read strictly, so a
/// malformed message is refused whole; and it costs a fraction of JSON through `Codable`, paid
/// for every request on both sides.
enum WriteMessages {
    /// The subject a stream's primary answers write requests on. Stream names hold no dots, so
    /// it is one token after the prefix; NATS permissions can allow it apart from the stream's.
    static func subject(stream: String) -> String { "feedstore-writes.\(stream)" }

    /// A replica's request: its id, the same on every retry, and the writes of one transaction.
    struct Request: Equatable {
        var id: String
        var writes: [RecordWrite]
        /// The requester reads the request's success from the stream (the commit that applies
        /// it names it), so the primary sends no reply for it: only refusals, requests applied
        /// before, and requests whose writes made no commit are answered.
        var answeredByStream = false
    }

    /// The primary's answer.
    enum Reply: Equatable {
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
    enum Refusal: Codable, Equatable {
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
            case let .unknownEntity(name, _): self = .unknownEntity(name)
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
            case let .unknownEntity(name): .unknownEntity(name, entities: [])
            case let .recordRefused(entity, id, field, reason): .recordRefused(entity: entity, id: id, field: field, reason: reason)
            case let .preconditionFailed(entity, id, reason): .preconditionFailed(entity: entity, id: id, reason: reason)
            case let .keyTooLarge(entity, index, size, limit): .keyTooLarge(entity: entity, index: index, size: size, limit: limit)
            case let .invalidRange(entity, index, reason): .invalidRange(entity: entity, index: index, reason: reason)
            case let .encodingFailed(entity, reason): .encodingFailed(entity: entity, reason: reason)
            }
        }
    }

    /// A message that is not a Feedstore write request or reply.
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    // MARK: Requests

    static func encode(_ request: Request) -> [UInt8] {
        var members: [String: FieldValue] = ["id": .string(request.id), "writes": .array(request.writes.map(value(of:)))]
        if request.answeredByStream { members["answeredByStream"] = .bool(true) }
        return FieldValue.object(members).storedEncoding
    }

    static func decodeRequest(_ bytes: [UInt8]) throws -> Request {
        let message = try Members(FieldValue(storedEncoding: bytes), "a write request")
        guard case let .array(writes) = try message.required("writes") else { throw Malformed(description: "a write request's writes are not a list") }
        return Request(id: try message.string("id"), writes: try writes.map(write(from:)), answeredByStream: message.fields["answeredByStream"] == .bool(true))
    }

    /// A write as a value: `entity`, `id`, `action` (`insert`, `put` or `delete`), `fields` for
    /// an insert or put, and `absent: true` or `equals: {fields}` for a precondition.
    private static func value(of write: RecordWrite) -> FieldValue {
        var members: [String: FieldValue] = ["entity": .string(write.entity), "id": write.id]
        switch write.action {
        case let .insert(fields): members["action"] = .string("insert"); members["fields"] = .object(fields)
        case let .put(fields): members["action"] = .string("put"); members["fields"] = .object(fields)
        case .delete: members["action"] = .string("delete")
        }
        switch write.precondition {
        case .absent?: members["absent"] = .bool(true)
        case let .equals(fields)?: members["equals"] = .object(fields)
        case nil: break
        }
        return .object(members)
    }

    private static func write(from value: FieldValue) throws -> RecordWrite {
        let members = try Members(value, "a write")
        let action: RecordWrite.Action
        switch try members.string("action") {
        case "insert": action = .insert(fields: try members.object("fields"))
        case "put": action = .put(fields: try members.object("fields"))
        case "delete": action = .delete
        case let other: throw Malformed(description: "a write's action \"\(other)\" is not insert, put or delete")
        }
        let precondition: RecordWrite.Precondition? =
            members.fields["equals"] != nil ? .equals(try members.object("equals")) : members.fields["absent"] == .bool(true) ? .absent : nil
        return RecordWrite(entity: try members.string("entity"), id: try members.required("id"), action: action, precondition: precondition)
    }

    // MARK: Replies

    static func encode(_ reply: Reply) throws -> [UInt8] {
        switch reply {
        case let .applied(sequence, repeated):
            return FieldValue.object(["applied": .uint(sequence), "repeated": .bool(repeated)]).storedEncoding
        case let .refused(refusal):
            // Refusals are rare and varied: their fields go as `Codable` writes them.
            return FieldValue.object(["refused": .bytes([UInt8](try JSONEncoder().encode(refusal)))]).storedEncoding
        case let .notApplied(reason, retry):
            return FieldValue.object(["notApplied": .string(reason), "retry": .bool(retry)]).storedEncoding
        }
    }

    static func decodeReply(_ bytes: [UInt8]) throws -> Reply {
        let reply = try Members(FieldValue(storedEncoding: bytes), "a write reply")
        if case let .uint(sequence)? = reply.fields["applied"] { return .applied(sequence: sequence, repeated: reply.fields["repeated"] == .bool(true)) }
        if case let .bytes(refusal)? = reply.fields["refused"] { return .refused(try JSONDecoder().decode(Refusal.self, from: Data(refusal))) }
        return .notApplied(reason: try reply.string("notApplied"), retry: reply.fields["retry"] == .bool(true))
    }

    /// The members of a message's object, read with errors that name what is missing.
    private struct Members {
        let fields: [String: FieldValue]
        let what: String

        init(_ value: FieldValue, _ what: String) throws {
            guard case let .object(fields) = value else { throw Malformed(description: "\(what) is not an object") }
            self.fields = fields
            self.what = what
        }

        func required(_ name: String) throws -> FieldValue {
            guard let value = fields[name] else { throw Malformed(description: "\(what) has no \(name)") }
            return value
        }

        func string(_ name: String) throws -> String {
            guard case let .string(text) = try required(name) else { throw Malformed(description: "\(what)'s \(name) is not a string") }
            return text
        }

        func object(_ name: String) throws -> [String: FieldValue] {
            guard case let .object(members) = try required(name) else { throw Malformed(description: "\(what)'s \(name) is not an object") }
            return members
        }
    }
}
