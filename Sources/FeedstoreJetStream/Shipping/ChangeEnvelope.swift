import Feedstore
import Foundation

/// The message of one shipped commit: versioned JSON that consumers in any language read, in the
/// spirit of Debezium's change events. Version 1:
///
/// ```
/// {"v": 1,
///  "source": {"store": "<store uuid>", "sequence": 42, "time": "2026-11-24T12:00:00.000Z"},
///  "entries": [{"entity": "Message", "id": 7, "op": "c" | "u" | "d",
///               "changedFields": ["isRead"],
///               "after": {…the record's fields…} | null,
///               "indexKeys": {"byFolderDate": {"before": [1, "2026-…"] | null, "after": […] | null}}}]}
/// ```
///
/// Object keys are in UTF-8 order; values print as ``FieldValue/jsonText`` prints them (dates as
/// ISO 8601 strings, UUIDs as strings, bytes as base64). `after` is null for deletes. There is no
/// `before` record: the journal keeps index keys before a change, not records.
public enum ChangeEnvelope {
    /// The envelope version this library writes and reads.
    public static let version = 1

    /// The envelope of `commit`, shipped from the store `store`.
    /// - Throws: ``JetStreamError/commitWithoutRecord(sequence:)`` when an insert or update lacks
    ///   its record (a commit made before the store kept record images).
    public static func encode(_ commit: JournalCommit, store: UUID) throws -> [UInt8] {
        let entries = try commit.entries.map { entry -> FieldValue in
            if entry.kind != .delete && entry.record == nil { throw JetStreamError.commitWithoutRecord(sequence: commit.sequence) }
            var keys: [String: FieldValue] = [:]
            for change in entry.indexChanges {
                keys[change.index] = .object(["before": try change.before.map { .array(try $0.components()) } ?? .null,
                                              "after": try change.after.map { .array(try $0.components()) } ?? .null])
            }
            return .object([
                "entity": .string(entry.entity),
                "id": entry.id,
                "op": .string(entry.kind == .insert ? "c" : entry.kind == .update ? "u" : "d"),
                "changedFields": .array(entry.changedFields.map(FieldValue.string)),
                "after": entry.record.map(FieldValue.object) ?? .null,
                "indexKeys": .object(keys),
            ])
        }
        let envelope = FieldValue.object([
            "v": .int(Int64(version)),
            "source": .object(["store": .string(store.uuidString.lowercased()), "sequence": .uint(commit.sequence),
                               "time": .date(commit.timestamp)]),
            "entries": .array(entries),
        ])
        return Array(envelope.jsonText.utf8)
    }

    /// The `Nats-Msg-Id` of a commit: the store and the sequence, so that JetStream drops a
    /// second publish of the same commit.
    public static func messageID(store: UUID, sequence: UInt64) -> String {
        "\(store.uuidString.lowercased()):\(sequence)"
    }

    /// The store and sequence a `Nats-Msg-Id` names, or nil when it is not one of ours.
    static func parseMessageID(_ id: String) -> (store: String, sequence: UInt64)? {
        guard let colon = id.lastIndex(of: ":"), let sequence = UInt64(id[id.index(after: colon)...]) else { return nil }
        return (String(id[..<colon]), sequence)
    }
}
