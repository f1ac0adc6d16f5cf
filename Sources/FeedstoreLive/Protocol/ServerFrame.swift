import Feedstore

/// The frames the server sends, as JSON text.
public enum ServerFrame {
    /// The protocol's version, which `welcome` names; a change that an older client would
    /// misread makes a new one.
    public static let version = 1

    /// `{"type":"welcome","v":1,"session":…,"resumed":…}`: the first frame of a connection, and
    /// the answer to a `resume` frame. `session` is the token to resume with after the
    /// connection drops (the last welcome's); `resumed` says whether a `resume` found the
    /// session it named (false on a new connection).
    public static func welcome(session: String, resumed: Bool) -> String {
        FieldValue.object(["type": "welcome", "v": .int(Int64(version)), "session": .string(session), "resumed": .bool(resumed)]).jsonText
    }

    /// `{"type":"batch","id":…}` and the members of a `storectl watch --jsonl` batch.
    public static func batch(id: FieldValue, _ members: [String: FieldValue]) -> String {
        FieldValue.object(members.merging(["type": "batch", "id": id]) { $1 }).jsonText
    }

    /// `{"type":"rows","id":…,"offset":…,"rows":[{"at":[s,r],"record":{…}}…]}`: fewer rows
    /// than asked for past the end.
    public static func rows(id: FieldValue, offset: Int, _ rows: [(path: RowPath, record: [String: FieldValue])]) -> String {
        FieldValue.object([
            "type": "rows", "id": id, "offset": .int(Int64(offset)),
            "rows": .array(rows.map { .object(["at": $0.path.json, "record": .object($0.record)]) }),
        ]).jsonText
    }

    /// `{"type":"error","code":…,"message":…,"id":…}` (no id when the frame named none).
    public static func error(_ error: LiveError) -> String {
        var members: [String: FieldValue] = ["type": "error", "code": .string(error.code.rawValue), "message": .string(error.message)]
        if let id = error.id { members["id"] = id }
        return FieldValue.object(members).jsonText
    }
}
