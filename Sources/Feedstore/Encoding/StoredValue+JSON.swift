extension StoredValue {
    /// Appends the value as ``FieldValue/jsonText`` writes it, read straight from the stored
    /// bytes: arrays and objects are written as they are walked, not built as trees first.
    func appendJSON(to out: inout [UInt8]) throws {
        switch try scalar() {
        case .null: out += "null".utf8
        case let .bool(b): out += (b ? "true" : "false").utf8
        case let .int(i): out += String(i).utf8
        case let .uint(u): out += String(u).utf8
        case let .double(d): FieldValue.double(d).appendJSON(to: &out)
        case let .date(d): FieldValue.date(d).appendJSON(to: &out)
        case let .uuid(u): FieldValue.appendJSONString(u.uuidString, to: &out)
        case .other:
            if let s = try string() {
                FieldValue.appendJSONString(s, to: &out)
            } else if let b = try rawBytes() {
                FieldValue.bytes(b).appendJSON(to: &out)
            } else if var items = try items() {
                out.append(UInt8(ascii: "["))
                var first = true
                while let item = try items.next() {
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    try item.appendJSON(to: &out)
                }
                out.append(UInt8(ascii: "]"))
            } else if var members = try members() {
                // In key order, as tree objects print.
                var sorted: [(key: String, value: StoredValue)] = []
                sorted.reserveCapacity(members.count)
                while let (key, value) = try members.next() { sorted.append((String(decoding: key, as: UTF8.self), value)) }
                sorted.sort { $0.key.precedesAsKey($1.key) }
                try Self.appendJSONObject(sorted, to: &out)
            }
        }
    }

    /// Appends members, already in order, as a JSON object.
    static func appendJSONObject(_ members: [(key: String, value: StoredValue)], to out: inout [UInt8]) throws {
        out.append(UInt8(ascii: "{"))
        for (i, member) in members.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            FieldValue.appendJSONString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            try member.value.appendJSON(to: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}
