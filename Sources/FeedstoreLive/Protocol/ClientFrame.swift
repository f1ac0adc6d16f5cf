import Feedstore

/// A frame from the client, parsed and checked: every member known and of its type. What is
/// wrong is a ``LiveError`` naming the member; nothing a client sends crashes the server.
public enum ClientFrame: Sendable, Hashable {
    /// Opens subscription `id` on a query.
    case subscribe(id: FieldValue, LiveQuery)
    /// Moves a subscription's window.
    case setWindow(id: FieldValue, offset: Int, limit: Int)
    /// Asks for the rows at positions `offset..<offset + limit` of an indexes-mode subscription,
    /// as of the last batch sent.
    case rows(id: FieldValue, offset: Int, limit: Int)
    /// Closes a subscription.
    case unsubscribe(id: FieldValue)
    /// Continues the session a dropped connection held: `session` is the token its `welcome`
    /// gave, and each entry is a subscription the client holds, with its query (as the client
    /// would subscribe now, window included) and the `toSequence` of the last batch it applied.
    case resume(session: String, [ResumedSubscription])

    /// A subscription as a `resume` frame names it.
    public struct ResumedSubscription: Sendable, Hashable {
        public var id: FieldValue
        public var query: LiveQuery
        /// The `toSequence` of the last batch the client applied; nil when it has none.
        public var applied: UInt64?

        public init(id: FieldValue, query: LiveQuery, applied: UInt64?) {
            self.id = id
            self.query = query
            self.applied = applied
        }
    }

    /// Parses one text frame.
    public init(text: String) throws(LiveError) {
        let value: FieldValue
        do {
            value = try FieldValue(jsonText: text)
        } catch {
            throw LiveError(.malformed, "the frame is not JSON")
        }
        guard case let .object(members) = value else { throw LiveError(.malformed, "the frame is not a JSON object") }
        var reader = MemberReader(members: members)
        let type = try reader.string("type")
        switch type {
        case "subscribe":
            let (id, query) = try reader.subscription()
            try reader.noOthers()
            self = .subscribe(id: id, query)
        case "resume":
            let session = try reader.string("session")
            guard let entries = try reader.optionalArray("subscriptions") else { throw LiveError(.malformed, "subscriptions must be given") }
            try reader.noOthers()
            self = try .resume(session: session, entries.map { entry throws(LiveError) in
                guard case let .object(members) = entry else { throw LiveError(.malformed, "each of subscriptions must be an object") }
                var entryReader = MemberReader(members: members, read: [])
                let (id, query) = try entryReader.subscription()
                let applied = try entryReader.optionalSequence("applied")
                try entryReader.noOthers()
                return ResumedSubscription(id: id, query: query, applied: applied)
            })
        case "setWindow", "rows":
            let id = try reader.id()
            reader.named = id
            let offset = try reader.count("offset"), limit = try reader.count("limit")
            try reader.noOthers()
            self = type == "rows" ? .rows(id: id, offset: offset, limit: limit) : .setWindow(id: id, offset: offset, limit: limit)
        case "unsubscribe":
            let id = try reader.id()
            reader.named = id
            try reader.noOthers()
            self = .unsubscribe(id: id)
        default:
            let shown = type.count > 40 ? type.prefix(40) + "…" : Substring(type)
            throw LiveError(.unknownType, "\"\(shown)\" is not a frame type; they are subscribe, setWindow, rows, unsubscribe and resume",
                            id: members["id"].flatMap { MemberReader.isID($0) ? $0 : nil })
        }
    }
}

/// Reads a frame's members, remembering which were read so that an unknown one is refused.
private struct MemberReader {
    let members: [String: FieldValue]
    var read: Set<String>
    /// The subscription the frame names, for errors.
    var named: FieldValue?

    init(members: [String: FieldValue], read: Set<String> = ["type"]) {
        self.members = members
        self.read = read
    }

    /// A subscription's id and query: the members of a `subscribe` frame, or of an entry of a
    /// `resume` frame's `subscriptions`.
    mutating func subscription() throws(LiveError) -> (FieldValue, LiveQuery) {
        let id = try id()
        named = id
        let mode = try optionalString("mode") ?? "objects"
        guard let parsedMode = LiveQuery.Mode(rawValue: mode) else {
            throw LiveError(.malformed, "mode is \"\(mode)\"; it is \"objects\" or \"indexes\"", id: id)
        }
        let query = LiveQuery(entity: try string("entity"), index: try string("index"),
                              prefix: try optionalArray("prefix") ?? [], from: try optionalArray("from"),
                              to: try optionalArray("to"), reverse: try optionalBool("reverse") ?? false,
                              sectionBy: try optionalCount("sectionBy") ?? 0, offset: try optionalCount("offset") ?? 0,
                              limit: try optionalCount("limit"), fields: try optionalStrings("fields"), mode: parsedMode,
                              filter: try optionalFilter("filter"))
        return (id, query)
    }

    static func isID(_ value: FieldValue) -> Bool {
        switch value {
        case let .string(s): !s.isEmpty && s.utf8.count <= 64
        case .int, .uint: true
        default: false
        }
    }

    private func wrong(_ name: String, _ expected: String) -> LiveError {
        LiveError(.malformed, "\(name) must be \(expected)", id: named)
    }

    private mutating func value(_ name: String) -> FieldValue? {
        read.insert(name)
        guard let value = members[name], value != .null else { return nil }
        return value
    }

    mutating func id() throws(LiveError) -> FieldValue {
        guard let value = value("id") else { throw wrong("id", "given") }
        guard Self.isID(value) else { throw wrong("id", "a string of 1 to 64 bytes or an integer") }
        return value
    }

    /// A condition in ``IndexCondition``'s JSON form.
    mutating func optionalFilter(_ name: String) throws(LiveError) -> IndexCondition? {
        guard let value = value(name) else { return nil }
        do {
            return try IndexCondition(json: value)
        } catch {
            throw LiveError(.malformed, "\(name): \(error)", id: named)
        }
    }

    mutating func optionalString(_ name: String) throws(LiveError) -> String? {
        guard let value = value(name) else { return nil }
        guard case let .string(s) = value else { throw wrong(name, "a string") }
        return s
    }

    mutating func string(_ name: String) throws(LiveError) -> String {
        guard let s = try optionalString(name) else { throw wrong(name, "given") }
        return s
    }

    mutating func optionalBool(_ name: String) throws(LiveError) -> Bool? {
        guard let value = value(name) else { return nil }
        guard case let .bool(b) = value else { throw wrong(name, "true or false") }
        return b
    }

    /// A whole number from 0 to 2^31.
    mutating func optionalCount(_ name: String) throws(LiveError) -> Int? {
        guard let value = value(name) else { return nil }
        let count: Int64? = switch value {
        case let .int(i): i
        case let .uint(u): Int64(exactly: u)
        case let .double(d): Int64(exactly: d)
        default: nil
        }
        guard let count, (0...Int64(Int32.max)).contains(count) else { throw wrong(name, "a whole number from 0 to 2147483647") }
        return Int(count)
    }

    /// A commit sequence: a whole number from 0 to 2^64 − 1.
    mutating func optionalSequence(_ name: String) throws(LiveError) -> UInt64? {
        guard let value = value(name) else { return nil }
        switch value {
        case let .uint(u): return u
        case let .int(i) where i >= 0: return UInt64(i)
        case let .double(d) where d >= 0 && d == d.rounded() && d < 0x1p64: return UInt64(d)
        default: throw wrong(name, "a commit sequence (a whole number from 0)")
        }
    }

    mutating func count(_ name: String) throws(LiveError) -> Int {
        guard let count = try optionalCount(name) else { throw wrong(name, "given") }
        return count
    }

    mutating func optionalArray(_ name: String) throws(LiveError) -> [FieldValue]? {
        guard let value = value(name) else { return nil }
        guard case let .array(elements) = value else { throw wrong(name, "an array of key components") }
        return elements
    }

    mutating func optionalStrings(_ name: String) throws(LiveError) -> [String]? {
        guard let elements = try optionalArray(name) else { return nil }
        return try elements.map { element throws(LiveError) in
            guard case let .string(s) = element else { throw wrong(name, "an array of field names") }
            return s
        }
    }

    func noOthers() throws(LiveError) {
        if let other = members.keys.filter({ !read.contains($0) }).sorted().first {
            let shown = other.count > 40 ? other.prefix(40) + "…" : Substring(other)
            throw LiveError(.malformed, "\"\(shown)\" is not a member of this frame", id: named)
        }
    }
}
