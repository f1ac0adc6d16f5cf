@_spi(Replication) import Feedstore
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
///               "stored": "<base64>" | null,
///               "indexKeys": {"byFolderDate": {"before": [1, "2026-…"] | null, "after": […] | null}}}]}
/// ```
///
/// Object keys are in UTF-8 order; values print as ``FieldValue/jsonText`` prints them (dates as
/// ISO 8601 strings, UUIDs as strings, bytes as base64). `after` is null for deletes. There is no
/// `before` record: the journal keeps index keys before a change, not records. `stored` is the
/// same record in Feedstore's binary value encoding, base64: exact where JSON is not (dates to
/// the nanosecond, UUIDs, bytes and nested values keep their kinds); Feedstore replicas read it,
/// other consumers read `after`. An envelope may
/// also carry `"schema"`: the store's catalog entries (key kind, fields and their kinds, index
/// definitions) of entities it changes, the first time a shipper sends them and whenever they
/// change; a replica declares its entities from them. An envelope may carry `"requests"`: the
/// ids of forwarded write requests (``ReplicaWriter``) whose writes the commit holds, with when
/// the primary applied them (`[{"id": "…", "time": "…"}]`), which a replica remembers so that,
/// once promoted, it answers them again instead of applying them twice.
///
/// When a replica is promoted, its first message is a promotion record: no entries, its `source`
/// the promoted store and the sequence it continues after, and the store it replaces:
///
/// ```
/// {"promotion": {"from": "<old primary's uuid>", "through": 1003},
///  "source": {"store": "<promoted store's uuid>", "sequence": 1003, "time": "…"}, "v": 1}
/// ```
///
/// Its `Nats-Msg-Id` is `promotion:<promoted store>:<sequence>`.
public enum ChangeEnvelope {
    /// The envelope version this library writes and reads.
    public static let version = 1

    /// The envelope of `commit`, shipped from the store `store`, with the catalog entries of
    /// `schemas` (what a replica needs to store the records with their kinds and indexes).
    /// - Throws: ``JetStreamError/commitWithoutRecord(sequence:)`` when an insert or update lacks
    ///   its record (a commit made before the store kept record images).
    public static func encode(_ commit: JournalCommit, store: UUID, schemas: [CatalogEntity] = [], requests: [AppliedRequest] = []) throws -> [UInt8] {
        try encode(commit, storeText: store.uuidString.lowercased(), schemas: schemas, requests: requests)
    }

    /// ``encode(_:store:schemas:requests:)`` with the store's identifier already written out, in
    /// lowercase (a shipper writes it once, not for every commit).
    static func encode(_ commit: JournalCommit, storeText: String, schemas: [CatalogEntity] = [], requests: [AppliedRequest] = []) throws -> [UInt8] {
        // Written straight to bytes, members in UTF-8 order as in every object here: entries,
        // requests, schema, source, v; in an entry, after, changedFields, entity, id,
        // indexKeys, op, stored.
        var out: [UInt8] = []
        out.reserveCapacity(512 * max(1, commit.entries.count))
        func put(_ text: StaticString) { out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)) }
        // The record's stored encoding, written beside its JSON and then put in base64.
        var stored: [UInt8] = []
        put("{\"entries\":[")
        for (i, entry) in commit.entries.enumerated() {
            if entry.kind != .delete && entry.record == nil { throw JetStreamError.commitWithoutRecord(sequence: commit.sequence) }
            if i > 0 { put(",") }
            put("{\"after\":")
            stored.removeAll(keepingCapacity: true)
            if let record = entry.record { FieldValue.appendObject(record, json: &out, stored: &stored) } else { put("null") }
            put(",\"changedFields\":[")
            for (j, field) in entry.changedFields.enumerated() {
                if j > 0 { put(",") }
                FieldValue.appendJSONString(field, to: &out)
            }
            put("],\"entity\":")
            FieldValue.appendJSONString(entry.entity, to: &out)
            put(",\"id\":")
            entry.id.appendJSON(to: &out)
            put(",\"indexKeys\":{")
            // A text index changes one entry per word; its first, the empty word's, is the
            // record's key in the index's order, which is what the envelope names.
            var named = Set<String>()
            let changes = entry.indexChanges.filter { named.insert($0.index).inserted }
            for (j, change) in changes.sorted(by: { $0.index.utf8.lexicographicallyPrecedes($1.index.utf8) }).enumerated() {
                if j > 0 { put(",") }
                FieldValue.appendJSONString(change.index, to: &out)
                put(":{\"after\":")
                if let key = change.after { FieldValue.array(try key.components()).appendJSON(to: &out) } else { put("null") }
                put(",\"before\":")
                if let key = change.before { FieldValue.array(try key.components()).appendJSON(to: &out) } else { put("null") }
                put("}")
            }
            put("},\"op\":")
            put(entry.kind == .insert ? "\"c\"" : entry.kind == .update ? "\"u\"" : "\"d\"")
            put(",\"stored\":")
            if entry.record != nil {
                out.append(UInt8(ascii: "\""))
                Base64.append(stored, to: &out)
                out.append(UInt8(ascii: "\""))
            } else {
                put("null")
            }
            put("}")
        }
        put("]")
        if !requests.isEmpty {
            put(",\"requests\":")
            FieldValue.array(requests.map { .object(["id": .string($0.id), "time": .date($0.time)]) }).appendJSON(to: &out)
        }
        if !schemas.isEmpty {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            put(",\"schema\":{")
            for (j, entity) in schemas.sorted(by: { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }).enumerated() {
                if j > 0 { put(",") }
                FieldValue.appendJSONString(entity.name, to: &out)
                put(":")
                out += try encoder.encode(entity)
            }
            put("}")
        }
        put(",\"source\":{\"sequence\":")
        FieldValue.appendDecimal(commit.sequence, negative: false, to: &out)
        put(",\"store\":\"")
        out += storeText.utf8
        put("\",\"time\":")
        FieldValue.date(commit.timestamp).appendJSON(to: &out)
        put("},\"v\":")
        FieldValue.appendDecimal(UInt64(version), negative: false, to: &out)
        put("}")
        return out
    }

    /// The promotion record of `store`, which continues the history of `from` after its commit
    /// `through`.
    static func encodePromotion(store: UUID, from: UUID, through: UInt64, time: Date = Date()) -> [UInt8] {
        let promotion = FieldValue.object(["from": .string(from.uuidString.lowercased()), "through": .uint(through)])
        let source = FieldValue.object(["store": .string(store.uuidString.lowercased()), "sequence": .uint(through), "time": .date(time)])
        return Array(("{\"promotion\":" + promotion.jsonText + ",\"source\":" + source.jsonText + ",\"v\":\(version)}").utf8)
    }

    /// The `Nats-Msg-Id` of a promotion record.
    static func promotionMessageID(store: UUID, through: UInt64) -> String {
        "promotion:" + messageID(store: store, sequence: through)
    }

    /// What a promotion record says: the store replaced and its last commit in the stream.
    struct Promotion: Equatable {
        var from: UUID
        var through: UInt64
    }

    /// One entry of a received envelope.
    struct Entry {
        var entity: String
        var id: FieldValue
        var op: String
        /// The record, nil for a delete.
        var record: ReplicatedChange.Record?

        /// The record's fields by name, nil for a delete.
        var after: [String: FieldValue]? { try? record?.fields() }
        /// Whether the record is the origin's exact stored one rather than read from JSON.
        var exact: Bool {
            if case .stored = record { return true }
            return false
        }
    }

    /// A received envelope: its commit and the catalog entries it carries.
    struct Received {
        var store: String
        var sequence: UInt64
        var entries: [Entry]
        var schemas: [String: CatalogEntity]
        /// The forwarded write requests the commit holds: their ids and when they were applied.
        var requests: [(id: String, time: Date)] = []
        /// Set for a promotion record, which has no entries.
        var promotion: Promotion? = nil
        /// When the origin made the commit (`source.time`) as the envelope writes it, unparsed.
        var timeText: String?

        /// The envelope's source (store, sequence, time), and each entry's entity, id,
        /// operation and record: to compare commits.
        var commit: FieldValue {
            var source: [String: FieldValue] = ["store": .string(store), "sequence": .uint(sequence)]
            if let timeText { source["time"] = .string(timeText) }
            guard promotion == nil else { return .object(["source": .object(source)]) }
            return .object(["source": .object(source), "entries": .array(entries.map { entry in
                .object(["entity": .string(entry.entity), "id": entry.id, "op": .string(entry.op), "after": entry.after.map(FieldValue.object) ?? .null])
            })])
        }
    }

    /// Writes and reads the times of the Object Store's metadata (ISO 8601 with milliseconds).
    nonisolated(unsafe) static let timeFormatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()

    /// Reads an envelope of this library's version. Only the values a replica uses are read:
    /// an entry's exact `stored` record stands for its `after`, which is then skipped, as are
    /// `indexKeys` and `changedFields`.
    static func decode(_ data: [UInt8], streamSequence: UInt64) throws -> Received {
        func bad(_ reason: String) -> JetStreamError { .badEnvelope(streamSequence: streamSequence, reason: reason) }
        let scanner = JSONScanner(data)
        let members: JSONScanner.Members, entryObjects: [JSONScanner.Members]?
        do { (members, entryObjects) = try scanner.members(of: 0..<data.count, withObjectsIn: "entries") } catch {
            throw bad("not a JSON object whose entries are objects (\(error))")
        }
        let v = members["v"].flatMap { try? scanner.value(in: $0) }
        guard v == .int(Int64(version)) else { throw bad("version \(v?.jsonText ?? "missing"), expected \(version)") }
        guard let sourceRange = members["source"], let source = try? scanner.members(of: sourceRange),
              let store = source["store"].flatMap({ try? scanner.string(in: $0) }),
              let sequence = source["sequence"].flatMap({ try? scanner.value(in: $0) }).flatMap(Self.unsigned)
        else { throw bad("no source store and sequence") }
        let timeText = source["time"].flatMap { try? scanner.string(in: $0) }
        if let range = members["promotion"], !scanner.isNull(range) {
            guard case let .object(promotion)? = try? scanner.value(in: range), case let .string(from)? = promotion["from"],
                  let fromStore = UUID(uuidString: from), let through = promotion["through"].flatMap(Self.unsigned), through == sequence
            else { throw bad("a promotion record without the store it replaces and the commit it continues after") }
            return Received(store: store, sequence: sequence, entries: [], schemas: [:],
                            promotion: Promotion(from: fromStore, through: through), timeText: timeText)
        }
        guard let items = entryObjects, members["entries"] != nil else { throw bad("no entries") }
        let entries = try items.map { entry -> Entry in
            guard let entity = entry["entity"].flatMap({ try? scanner.string(in: $0) }),
                  let id = entry["id"].flatMap({ try? scanner.value(in: $0) }), let op = entry["op"].flatMap({ try? scanner.string(in: $0) }),
                  op == "c" || op == "u" || op == "d"
            else { throw bad("an entry without entity, id or op") }
            guard op != "d" else { return Entry(entity: entity, id: id, op: op, record: nil) }
            let record: ReplicatedChange.Record
            // The exact record, when the envelope has it, stands for `after`.
            if let stored = entry["stored"], !scanner.isNull(stored) {
                // Base64 read straight from the bytes; a string with escapes takes the long way.
                guard let bytes = scanner.base64(in: stored) ?? (try? scanner.string(in: stored)).flatMap({ Data(base64Encoded: $0) }).map({ Array($0) }),
                      let checked = try? ShippedRecord(validating: bytes)
                else { throw bad("a stored record that is not one") }
                record = .stored(checked)
            } else if let range = entry["after"], !scanner.isNull(range) {
                guard case let .object(fields)? = try? scanner.value(in: range) else { throw bad("an entry whose after is not an object") }
                record = .fields(fields)
            } else {
                throw bad("an insert or update without its record")
            }
            return Entry(entity: entity, id: id, op: op, record: record)
        }
        var schemas: [String: CatalogEntity] = [:]
        if let range = members["schema"] {
            do { schemas = try JSONDecoder().decode([String: CatalogEntity].self, from: Data(data[range])) } catch { throw bad("schema: \(error)") }
        }
        var requests: [(id: String, time: Date)] = []
        if let range = members["requests"] {
            guard let listed = try? scanner.objects(inArray: range) else { throw bad("requests that are not a list of objects") }
            for fields in listed {
                guard let id = fields["id"].flatMap({ try? scanner.string(in: $0) }),
                      let time = fields["time"].flatMap({ try? scanner.string(in: $0) }).flatMap(FieldValue.date(fromJSONText:))
                else { throw bad("a request without id or time") }
                requests.append((id, time))
            }
        }
        return Received(store: store, sequence: sequence, entries: entries, schemas: schemas, requests: requests, timeText: timeText)
    }

    /// Decodes an envelope as a replica does and counts its entries (for benchmarks).
    @_spi(Benchmarking) public static func entryCount(decoding data: [UInt8]) throws -> Int {
        try decode(data, streamSequence: 1).entries.count
    }

    /// Decodes an envelope as a replica does: each entry's change, for benchmarks that apply them
    /// as a replica does.
    @_spi(Benchmarking) public static func records(decoding data: [UInt8]) throws -> [ReplicatedChange] {
        try decode(data, streamSequence: 1).entries.map { ReplicatedChange(entity: $0.entity, id: $0.id, record: $0.record) }
    }

    static func unsigned(_ value: FieldValue) -> UInt64? {
        switch value {
        case let .int(v) where v >= 0: UInt64(v)
        case let .uint(v): v
        default: nil
        }
    }

    /// The `Nats-Msg-Id` of a commit: the store and the sequence, so that JetStream drops a
    /// second publish of the same commit.
    public static func messageID(store: UUID, sequence: UInt64) -> String {
        messageID(storeText: store.uuidString.lowercased(), sequence: sequence)
    }

    /// ``messageID(store:sequence:)`` with the store's identifier already written out, in lowercase.
    static func messageID(storeText: String, sequence: UInt64) -> String {
        storeText + ":" + String(sequence)
    }

    /// What a `Nats-Msg-Id` of ours names: the store and the sequence, and whether it is a
    /// promotion record; nil when it is not one of ours.
    static func parseMessageID(_ id: String) -> MessageID? {
        guard let colon = id.lastIndex(of: ":"), let sequence = UInt64(id[id.index(after: colon)...]) else { return nil }
        let store = id[..<colon]
        if store.hasPrefix("promotion:") { return MessageID(store: String(store.dropFirst("promotion:".count)), sequence: sequence, isPromotion: true) }
        return MessageID(store: String(store), sequence: sequence, isPromotion: false)
    }

    /// What a message id of ours names.
    struct MessageID: Equatable {
        /// The store that published it, lowercased.
        var store: String
        /// The commit it holds, or for a promotion record, the commit the promoted store continues after.
        var sequence: UInt64
        var isPromotion: Bool

        /// Where the message belongs in a stream's history: commits in sequence order, and a
        /// promotion record right after the commit it continues from. Increases along a stream.
        var position: UInt64 { sequence * 2 + (isPromotion ? 1 : 0) }
    }
}
