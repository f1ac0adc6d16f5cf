import Foundation

/// Reads keys written by ``KeyEncoding`` back into components, strictly: any malformed byte
/// sequence is an error, never a crash.
struct KeyDecoder {
    struct Component: Equatable {
        var value: FieldValue
        var descending: Bool
    }

    private let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    /// Decodes every component of `key`.
    static func decode(_ key: [UInt8]) throws -> [Component] {
        try key.withUnsafeBytes { (raw) throws -> [Component] in
            var decoder = KeyDecoder(raw)
            var result: [Component] = []
            while !decoder.isAtEnd { result.append(try decoder.next()) }
            return result
        }
    }

    /// The number of bytes the first `count` components of `key` take.
    static func lengthOfComponents(_ count: Int, in key: UnsafeRawBufferPointer) throws -> Int {
        var decoder = KeyDecoder(key)
        for _ in 0..<count { try decoder.skip() }
        return decoder.offset
    }

    private func fail(_ reason: String) -> FeedstoreError {
        .corruptData(what: "key", reason: "\(reason) at byte \(offset) of \(bytes.count)")
    }

    mutating func next() throws -> Component {
        guard offset < bytes.count else { throw fail("missing component") }
        let first = bytes[offset]
        let descending = first >= 0x80
        let flip: UInt8 = descending ? 0xFF : 0
        offset += 1
        guard let tag = KeyEncoding.Tag(rawValue: first ^ flip) else { throw fail("unknown tag \(first)") }
        let value: FieldValue
        switch tag {
        case .null: value = .null
        case .falseValue: value = .bool(false)
        case .trueValue: value = .bool(true)
        case .int: value = .int(Int64(bitPattern: try readUInt64(flip) ^ (1 << 63)))
        case .uint: value = .uint(try readUInt64(flip))
        case .double: value = .double(KeyEncoding.double(fromOrderedBits: try readUInt64(flip)))
        case .date: value = .date(Date(timeIntervalSinceReferenceDate: KeyEncoding.double(fromOrderedBits: try readUInt64(flip))))
        case .string:
            let raw = try readEscaped(flip)
            guard let s = String(validating: raw, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
            value = .string(s)
        case .bytes: value = .bytes(try readEscaped(flip))
        case .uuid:
            guard offset + 16 <= bytes.count else { throw fail("truncated UUID") }
            var u: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &u) { dst in
                for i in 0..<16 { dst[i] = bytes[offset + i] ^ flip }
            }
            offset += 16
            value = .uuid(UUID(uuid: u))
        }
        return Component(value: value, descending: descending)
    }

    /// Moves past one component without making its value; a string's UTF-8 is not checked.
    mutating func skip() throws {
        guard offset < bytes.count else { throw fail("missing component") }
        let first = bytes[offset]
        let flip: UInt8 = first >= 0x80 ? 0xFF : 0
        offset += 1
        guard let tag = KeyEncoding.Tag(rawValue: first ^ flip) else { throw fail("unknown tag \(first)") }
        switch tag {
        case .null, .falseValue, .trueValue: return
        case .int, .uint, .double, .date:
            guard offset + 8 <= bytes.count else { throw fail("truncated number") }
            offset += 8
        case .string, .bytes: _ = try readEscaped(flip, keeping: false)
        case .uuid:
            guard offset + 16 <= bytes.count else { throw fail("truncated UUID") }
            offset += 16
        }
    }

    private mutating func readUInt64(_ flip: UInt8) throws -> UInt64 {
        guard offset + 8 <= bytes.count else { throw fail("truncated number") }
        var v: UInt64 = 0
        for i in 0..<8 { v = v << 8 | UInt64(bytes[offset + i] ^ flip) }
        offset += 8
        return v
    }

    /// The unescaped bytes of a string or bytes component (nothing when not `keeping` them).
    private mutating func readEscaped(_ flip: UInt8, keeping: Bool = true) throws -> [UInt8] {
        var out: [UInt8] = []
        while true {
            guard offset < bytes.count else { throw fail("unterminated string") }
            let b = bytes[offset] ^ flip
            offset += 1
            if b != 0 {
                if keeping { out.append(b) }
                continue
            }
            guard offset < bytes.count else { throw fail("unterminated string") }
            let marker = bytes[offset] ^ flip
            offset += 1
            switch marker {
            case 0x00: return out
            case 0xFF: if keeping { out.append(0) }
            default: throw fail("bad escape \(marker)")
            }
        }
    }
}
