import Foundation

/// Persisted form (in the JSON catalog): a one-member object naming the kind, e.g. `{"int": 5}`;
/// doubles and dates keep their exact bits, bytes are base64.
extension FieldValue: Codable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        let key = Key(stringValue: kindName)
        switch self {
        case .null: try c.encodeNil(forKey: key)
        case let .bool(v): try c.encode(v, forKey: key)
        case let .int(v): try c.encode(v, forKey: key)
        case let .uint(v): try c.encode(v, forKey: key)
        case let .double(v): try c.encode(v.bitPattern, forKey: key)
        case let .date(v): try c.encode(v.timeIntervalSinceReferenceDate.bitPattern, forKey: key)
        case let .string(v): try c.encode(v, forKey: key)
        case let .bytes(v): try c.encode(Data(v).base64EncodedString(), forKey: key)
        case let .uuid(v): try c.encode(v.uuidString, forKey: key)
        case let .array(v): try c.encode(v, forKey: key)
        case let .object(v): try c.encode(v, forKey: key)
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        guard c.allKeys.count == 1, let key = c.allKeys.first else {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath, debugDescription: "expected one kind"))
        }
        switch key.stringValue {
        case "null": self = .null
        case "bool": self = .bool(try c.decode(Bool.self, forKey: key))
        case "int": self = .int(try c.decode(Int64.self, forKey: key))
        case "uint": self = .uint(try c.decode(UInt64.self, forKey: key))
        case "double": self = .double(Double(bitPattern: try c.decode(UInt64.self, forKey: key)))
        case "date": self = .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try c.decode(UInt64.self, forKey: key))))
        case "string": self = .string(try c.decode(String.self, forKey: key))
        case "bytes":
            guard let data = Data(base64Encoded: try c.decode(String.self, forKey: key)) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "bad base64")
            }
            self = .bytes([UInt8](data))
        case "uuid":
            guard let u = UUID(uuidString: try c.decode(String.self, forKey: key)) else {
                throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "bad UUID")
            }
            self = .uuid(u)
        case "array": self = .array(try c.decode([FieldValue].self, forKey: key))
        case "object": self = .object(try c.decode([String: FieldValue].self, forKey: key))
        default: throw DecodingError.dataCorruptedError(forKey: key, in: c, debugDescription: "unknown kind \(key.stringValue)")
        }
    }
}
