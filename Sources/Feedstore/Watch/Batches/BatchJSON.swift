/// Batches as JSON objects: the `storectl watch --jsonl` format, which the live-query protocol
/// sends too. Paths are `[section, row]`; records and ids are JSON as ``FieldValue/jsonText``
/// writes them.
///
/// Every batch has `fromSequence`, `toSequence`, `initial`, `reset`, `sectionDeletes`
/// (`{"at": s}`), `sectionInserts` (`{"at": s, "key": [components]}`), `deletes`, `inserts`,
/// `moves` and `updates`; a watcher with a window adds `window` (`{"offset", "limit"}`), the
/// window its state shows. In objects mode a delete is `{"at", "id"}`, an insert
/// `{"at", "id", "record"}`, a move or an update `{"from", "to", "id", "fields", "record"}`. In
/// indexes mode deletes and inserts are runs `{"at": [s, r], "count": k}`, moves
/// `{"from", "to"}`, updates `{"from", "to", "fields"}`.
extension DynamicChangeBatch {
    /// The batch's members as JSON values.
    public var jsonMembers: [String: FieldValue] {
        func pair(_ p: Pair) -> FieldValue {
            .object(["from": p.from.json, "to": p.to.json, "id": p.id, "fields": .array(p.fields.map { .string($0) }), "record": .object(p.record)])
        }
        return header.jsonMembers.merging([
            "deletes": .array(deletes.map { .object(["at": $0.path.json, "id": $0.id]) }),
            "inserts": .array(inserts.map { .object(["at": $0.path.json, "id": $0.id, "record": .object($0.record ?? [:])]) }),
            "moves": .array(moves.map(pair)),
            "updates": .array(updates.map(pair)),
        ]) { $1 }
    }
}

extension IndexBatch {
    /// The batch's members as JSON values: rows as runs.
    public var jsonMembers: [String: FieldValue] {
        func run(_ r: RowRange) -> FieldValue {
            .object(["at": .array([.int(Int64(r.section)), .int(Int64(r.rows.lowerBound))]), "count": .int(Int64(r.rows.count))])
        }
        return header.jsonMembers.merging([
            "deletes": .array(deletes.map(run)),
            "inserts": .array(inserts.map(run)),
            "moves": .array(moves.map { .object(["from": $0.from.json, "to": $0.to.json]) }),
            "updates": .array(updates.map { .object(["from": $0.from.json, "to": $0.to.json, "fields": .array($0.fields.map { .string($0) })]) }),
        ]) { $1 }
    }
}

extension BatchHeader {
    /// Sequences, flags and section changes.
    var jsonMembers: [String: FieldValue] {
        var members: [String: FieldValue] = [
            "fromSequence": .uint(fromSequence), "toSequence": .uint(toSequence), "initial": .bool(isInitial), "reset": .bool(isReset),
            "sectionDeletes": .array(sectionDeletes.map { .object(["at": .int(Int64($0))]) }),
            "sectionInserts": .array(sectionInserts.map { .object(["at": .int(Int64($0.index)), "key": .array($0.key)]) }),
        ]
        if let window { members["window"] = .object(["offset": .int(Int64(window.offset)), "limit": .int(Int64(window.limit))]) }
        return members
    }
}

extension RowPath {
    /// `[section, row]`.
    public var json: FieldValue { .array([.int(Int64(section)), .int(Int64(row))]) }
}
