import Foundation

/// One top-level field of a stored record: its catalog field number and value.
struct RecordField: Equatable {
    var id: UInt32
    var value: FieldValue
}

/// The compact, self-describing binary form of records.
///
/// `record := 0x01 count:varint (fieldID:varint value)*` with field numbers strictly ascending and
/// null fields left out (a missing field and a nil field are the same record), so equal content
/// always has equal bytes. `value := tag payload`; integers are (zigzag) varints, doubles and
/// dates 8 bytes little-endian, strings and bytes length-prefixed, arrays and objects count-prefixed
/// (object keys sorted). Field names live in the catalog, not in each record.
enum RecordCodec {
    static let formatByte: UInt8 = 0x01
    /// Nesting deeper than this is refused, so hostile bytes cannot exhaust the stack.
    static let maximumDepth = 64

    enum Tag: UInt8 {
        case null = 0, falseValue, trueValue, int, uint, double, string, bytes, date, uuid, array, object
    }

    /// Appends the record whose field number `i` holds `values[i]` (`.null` for none) to `out`.
    /// It walks the slots by index and tests for null by case, which copies no values.
    static func encode(byFieldID values: [FieldValue], into out: inout [UInt8]) {
        out.append(formatByte)
        var present = 0
        for i in values.indices {
            if case .null = values[i] { continue }
            present += 1
        }
        appendVarint(UInt64(present), to: &out)
        for i in values.indices {
            if case .null = values[i] { continue }
            appendVarint(UInt64(i), to: &out)
            appendValue(values[i], to: &out)
        }
    }

    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> [RecordField] {
        var reader = ByteReader(bytes)
        guard try reader.byte() == formatByte else { throw reader.failure("unknown record format") }
        let count = try reader.count()
        var fields: [RecordField] = []
        fields.reserveCapacity(count)
        var previous: Int64 = -1
        for _ in 0..<count {
            let id = try reader.varint()
            guard id <= UInt32.max, Int64(id) > previous else { throw reader.failure("field numbers out of order") }
            previous = Int64(id)
            fields.append(RecordField(id: UInt32(id), value: try decodeValue(&reader, depth: 0)))
        }
        guard reader.isAtEnd else { throw reader.failure("trailing bytes") }
        return fields
    }

    static func decode(_ bytes: [UInt8]) throws -> [RecordField] {
        try bytes.withUnsafeBytes { try decode($0) }
    }

    // MARK: Values

    static func appendValue(_ value: FieldValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(Tag.null.rawValue)
        case let .bool(b): out.append(b ? Tag.trueValue.rawValue : Tag.falseValue.rawValue)
        case let .int(i):
            out.append(Tag.int.rawValue)
            appendVarint(UInt64(bitPattern: (i << 1) ^ (i >> 63)), to: &out)
        case let .uint(u):
            out.append(Tag.uint.rawValue)
            appendVarint(u, to: &out)
        case let .double(d):
            out.append(Tag.double.rawValue)
            out.appendLittleEndian(d.bitPattern)
        case let .date(d):
            out.append(Tag.date.rawValue)
            out.appendLittleEndian(d.timeIntervalSinceReferenceDate.bitPattern)
        case let .string(s):
            out.append(Tag.string.rawValue)
            appendVarint(UInt64(s.utf8.count), to: &out)
            out.append(contentsOf: s.utf8)
        case let .bytes(b):
            out.append(Tag.bytes.rawValue)
            appendVarint(UInt64(b.count), to: &out)
            out.append(contentsOf: b)
        case let .uuid(u):
            out.append(Tag.uuid.rawValue)
            withUnsafeBytes(of: u.uuid) { out.append(contentsOf: $0) }
        case let .array(items):
            out.append(Tag.array.rawValue)
            appendVarint(UInt64(items.count), to: &out)
            for item in items { appendValue(item, to: &out) }
        case let .object(members):
            out.append(Tag.object.rawValue)
            appendVarint(UInt64(members.count), to: &out)
            for key in members.keys.sorted() {
                appendVarint(UInt64(key.utf8.count), to: &out)
                out.append(contentsOf: key.utf8)
                appendValue(members[key]!, to: &out)
            }
        }
    }

    static func decodeValue(_ reader: inout ByteReader, depth: Int) throws -> FieldValue {
        guard depth < maximumDepth else { throw reader.failure("nesting deeper than \(maximumDepth)") }
        let raw = try reader.byte()
        guard let tag = Tag(rawValue: raw) else { throw reader.failure("unknown value tag \(raw)") }
        switch tag {
        case .null: return .null
        case .falseValue: return .bool(false)
        case .trueValue: return .bool(true)
        case .int:
            let z = try reader.varint()
            return .int(Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1))
        case .uint: return .uint(try reader.varint())
        case .double: return .double(Double(bitPattern: try reader.fixed64()))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.fixed64())))
        case .string: return .string(try reader.string())
        case .bytes: return .bytes(Array(try reader.bytes(try reader.count())))
        case .uuid:
            let b = try reader.bytes(16)
            return .uuid(UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                                     b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])))
        case .array:
            let count = try reader.count()
            var items: [FieldValue] = []
            items.reserveCapacity(count)
            for _ in 0..<count { items.append(try decodeValue(&reader, depth: depth + 1)) }
            return .array(items)
        case .object:
            let count = try reader.count()
            var members: [String: FieldValue] = [:]
            for _ in 0..<count {
                let key = try reader.string()
                guard members[key] == nil else { throw reader.failure("duplicate key \(key)") }
                members[key] = try decodeValue(&reader, depth: depth + 1)
            }
            return .object(members)
        }
    }

    static func appendVarint(_ v: UInt64, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }
}

/// A bounds-checked reader over borrowed bytes; every read past the end is an error.
struct ByteReader {
    private let bytes: UnsafeRawBufferPointer
    private(set) var offset = 0
    var what = "record"

    init(_ bytes: UnsafeRawBufferPointer, what: String = "record") {
        self.bytes = bytes
        self.what = what
    }

    var isAtEnd: Bool { offset == bytes.count }
    var remaining: Int { bytes.count - offset }

    func failure(_ reason: String) -> FeedstoreError {
        .corruptData(what: what, reason: "\(reason) at byte \(offset) of \(bytes.count)")
    }

    mutating func byte() throws -> UInt8 {
        guard offset < bytes.count else { throw failure("unexpected end") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func bytes(_ n: Int) throws -> UnsafeRawBufferPointer {
        guard n >= 0, n <= remaining else { throw failure("length \(n) exceeds the \(remaining) bytes left") }
        defer { offset += n }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + n])
    }

    mutating func varint() throws -> UInt64 {
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
    mutating func count() throws -> Int {
        let n = try varint()
        guard n <= UInt64(remaining) else { throw failure("count \(n) exceeds the \(remaining) bytes left") }
        return Int(n)
    }

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

    mutating func string() throws -> String {
        let raw = try bytes(try count())
        guard let s = String(validating: raw, as: UTF8.self) else { throw failure("invalid UTF-8") }
        return s
    }
}
