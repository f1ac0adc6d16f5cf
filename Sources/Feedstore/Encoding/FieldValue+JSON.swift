import Foundation

extension FieldValue {
    /// The value as compact JSON text with sorted object keys (deterministic output for tools).
    ///
    /// JSON has no dates, UUIDs, bytes or 64-bit integers beyond 2^53, so: dates print as ISO 8601
    /// strings with fractional seconds, UUIDs as their string, bytes as base64, and integers
    /// exactly as written. Non-finite doubles print as strings ("nan", "inf", "-inf").
    public var jsonText: String {
        var out = ""
        appendJSON(to: &out)
        return out
    }

    func appendJSON(to out: inout String) {
        switch self {
        case .null: out += "null"
        case let .bool(v): out += v ? "true" : "false"
        case let .int(v): out += String(v)
        case let .uint(v): out += String(v)
        case let .double(v):
            if v.isNaN { out += "\"nan\"" } else if v.isInfinite { out += v < 0 ? "\"-inf\"" : "\"inf\"" } else {
                out += v == v.rounded() && abs(v) < 1e15 ? String(format: "%.1f", v) : "\(v)"
            }
        case let .date(d): Self.appendJSONString(Self.isoFormatter.string(from: d), to: &out)
        case let .string(s): Self.appendJSONString(s, to: &out)
        case let .bytes(b): Self.appendJSONString(Data(b).base64EncodedString(), to: &out)
        case let .uuid(u): Self.appendJSONString(u.uuidString, to: &out)
        case let .array(items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.appendJSON(to: &out)
            }
            out += "]"
        case let .object(members):
            out += "{"
            for (i, key) in members.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                Self.appendJSONString(key, to: &out)
                out += ":"
                members[key]!.appendJSON(to: &out)
            }
            out += "}"
        }
    }

    static func appendJSONString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20: out += String(format: "\\u%04x", c.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    nonisolated(unsafe) static let isoFormatter: ISO8601DateFormatter = {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }()

    /// Parses JSON text into a value: `true`/`false` become `.bool`, integral numbers `.int` (or
    /// `.uint` beyond `Int64.max`), other numbers `.double`. Tools use it to read keys given as JSON.
    ///
    /// - Throws: ``FeedstoreError/corruptData(what:reason:)`` when the text is not JSON.
    public init(jsonText: String) throws {
        do {
            self = try JSONDecoder().decode(JSONFieldValue.self, from: Data(jsonText.utf8)).value
        } catch {
            throw FeedstoreError.corruptData(what: "JSON text", reason: "\(jsonText) is not valid JSON")
        }
    }
}

/// Reads any JSON value as a ``FieldValue``, trying the narrowest type first.
private struct JSONFieldValue: Decodable {
    let value: FieldValue

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { value = .null }
        else if let b = try? container.decode(Bool.self) { value = .bool(b) }
        else if let i = try? container.decode(Int64.self) { value = .int(i) }
        else if let u = try? container.decode(UInt64.self) { value = .uint(u) }
        else if let d = try? container.decode(Double.self) { value = .double(d) }
        else if let s = try? container.decode(String.self) { value = .string(s) }
        else if let a = try? container.decode([JSONFieldValue].self) { value = .array(a.map(\.value)) }
        else { value = .object(try container.decode([String: JSONFieldValue].self).mapValues(\.value)) }
    }
}
