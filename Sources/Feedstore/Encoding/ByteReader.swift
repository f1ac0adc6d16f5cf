import Foundation

/// A bounds-checked reader over borrowed bytes; every read past the end is an error.
struct ByteReader {
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0
    /// What the bytes are, for error messages (static, so making a reader costs nothing).
    let what: StaticString

    init(_ bytes: UnsafeRawBufferPointer, what: StaticString = "record") {
        self.bytes = bytes
        self.what = what
    }

    var isAtEnd: Bool { offset == bytes.count }
    var remaining: Int { bytes.count - offset }

    func failure(_ reason: String) -> FeedstoreError {
        .corruptData(what: "\(what)", reason: "\(reason) at byte \(offset) of \(bytes.count)")
    }

    /// The bytes from `offset` to the end.
    func bytes(from offset: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: bytes[offset...])
    }

    /// The bytes not read yet.
    var rest: UnsafeRawBufferPointer { bytes(from: offset) }

    /// Moves past `n` bytes known to be there.
    mutating func skip(_ n: Int) {
        offset = Swift.min(offset + n, bytes.count)
    }

    @inline(__always)
    mutating func byte() throws -> UInt8 {
        guard offset < bytes.count else { throw failure("unexpected end") }
        defer { offset += 1 }
        return bytes[offset]
    }

    @inline(__always)
    mutating func bytes(_ n: Int) throws -> UnsafeRawBufferPointer {
        guard n >= 0, n <= remaining else { throw failure("length \(n) exceeds the \(remaining) bytes left") }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + n])
    }

    @inline(__always)
    mutating func varint() throws -> UInt64 {
        // One byte is the common case: small numbers, lengths and field numbers.
        if offset < bytes.count, bytes[offset] < 0x80 {
            defer { offset += 1 }
            return UInt64(bytes[offset])
        }
        return try longVarint()
    }

    private mutating func longVarint() throws -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try byte()
            guard shift < 64, !(shift == 63 && b > 1) else { throw failure("varint overflow") }
            result |= UInt64(b & 0x7F) << shift
            // A last byte of zero after others is an overlong form; the encoder never writes
            // one, so each value has exactly one accepted encoding.
            if b == 0 && shift > 0 { throw failure("overlong varint") }
            if b < 0x80 { return result }
            shift += 7
        }
    }

    /// A length or element count: a varint that cannot exceed the bytes left (each element takes
    /// at least one byte), so corrupt counts cannot trigger huge allocations.
    @inline(__always)
    mutating func count() throws -> Int {
        let n = try varint()
        guard n <= UInt64(remaining) else { throw failure("count \(n) exceeds the \(remaining) bytes left") }
        return Int(n)
    }

    @inline(__always)
    mutating func fixed64() throws -> UInt64 {
        let b = try bytes(8)
        var v: UInt64 = 0
        for i in (0..<8).reversed() { v = v << 8 | UInt64(b[i]) }
        return v
    }

    mutating func fixed32BigEndian() throws -> UInt32 {
        let b = try bytes(4)
        return b.reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A length-prefixed string's bytes, checked to be valid UTF-8, without making a `String`.
    @inline(__always)
    mutating func checkedString() throws -> UnsafeRawBufferPointer {
        let raw = try bytes(try count())
        guard raw.isValidUTF8 else { throw failure("invalid UTF-8") }
        return raw
    }

    mutating func uuid() throws -> UUID {
        let b = try bytes(16)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// Moves past one value of a record that was validated: only bounds are checked.
    mutating func skipValue() throws {
        let raw = try byte()
        guard let tag = RecordCodec.Tag.named(raw) else { throw failure("unknown value tag \(raw)") }
        switch tag {
        case .null, .falseValue, .trueValue: return
        case .int, .uint: _ = try varint()
        case .double, .date: _ = try bytes(8)
        case .string, .bytes: _ = try bytes(try count())
        case .uuid: _ = try bytes(16)
        case .array:
            for _ in 0..<(try count()) { try skipValue() }
        case .object:
            for _ in 0..<(try count()) {
                _ = try bytes(try count())
                try skipValue()
            }
        }
    }
}
