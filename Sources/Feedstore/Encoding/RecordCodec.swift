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

        /// The tag `raw` names, or nil. Faster than `init(rawValue:)`, which is a call and a
        /// switch: the cases are numbered from 0 without gaps, as their raw values are.
        @inline(__always)
        static func named(_ raw: UInt8) -> Tag? {
            raw <= Tag.object.rawValue ? unsafeBitCast(raw, to: Tag.self) : nil
        }
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

    /// Checks that `bytes` are a well-formed record, calling `field` with each top-level field's
    /// number and the offset of its value. Every rule of the format is checked here, once: field
    /// numbers ascending, known tags, canonical varints, counts and lengths within the bytes,
    /// valid UTF-8, no duplicate object keys, nesting at most ``maximumDepth``, no trailing bytes.
    /// Readers of validated bytes (``StoredValue``) then only copy.
    static func validate(_ bytes: UnsafeRawBufferPointer, field: (_ id: UInt32, _ offset: Int) throws -> Void) throws {
        var reader = ByteReader(bytes)
        guard try reader.byte() == formatByte else { throw reader.failure("unknown record format") }
        let count = try reader.count()
        var previous: Int64 = -1
        for _ in 0..<count {
            let id = try reader.varint()
            guard id <= UInt32.max, Int64(id) > previous else { throw reader.failure("field numbers out of order") }
            previous = Int64(id)
            try field(UInt32(id), reader.offset)
            try checkValue(&reader, depth: 0)
        }
        guard reader.isAtEnd else { throw reader.failure("trailing bytes") }
    }

    /// The record's top-level fields as ``FieldValue`` trees, for the readers that want them.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws -> [RecordField] {
        var offsets: [(UInt32, Int)] = []
        try validate(bytes) { id, offset in offsets.append((id, offset)) }
        return try offsets.map { RecordField(id: $0.0, value: try StoredValue(bytes, at: $0.1).fieldValue()) }
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
        case let .object(members): appendObject(FieldValue.sortedMembers(members), to: &out)
        }
    }

    /// Appends the object of `members`, which are in key order (``FieldValue/sortedMembers(_:)``).
    static func appendObject(_ members: [(key: String, value: FieldValue)], to out: inout [UInt8]) {
        out.append(Tag.object.rawValue)
        appendVarint(UInt64(members.count), to: &out)
        for member in members {
            appendVarint(UInt64(member.key.utf8.count), to: &out)
            out.append(contentsOf: member.key.utf8)
            appendValue(member.value, to: &out)
        }
    }

    /// Checks that `bytes` hold exactly one value, as ``appendValue(_:to:)`` writes it.
    static func validateValue(_ bytes: UnsafeRawBufferPointer) throws {
        var reader = ByteReader(bytes, what: "value")
        try checkValue(&reader, depth: 0)
        guard reader.isAtEnd else { throw reader.failure("trailing bytes") }
    }

    /// Checks one value and moves past it. Inlined: most values are scalars, checked in place;
    /// arrays and objects go through ``checkContainer(_:_:depth:)``.
    @inline(__always)
    private static func checkValue(_ reader: inout ByteReader, depth: Int) throws {
        guard depth < maximumDepth else { throw reader.failure("nesting deeper than \(maximumDepth)") }
        let raw = try reader.byte()
        guard let tag = Tag.named(raw) else { throw reader.failure("unknown value tag \(raw)") }
        switch tag {
        case .null, .falseValue, .trueValue: return
        case .int, .uint: _ = try reader.varint()
        case .double, .date: _ = try reader.bytes(8)
        case .string: _ = try reader.checkedString()
        case .bytes: _ = try reader.bytes(try reader.count())
        case .uuid: _ = try reader.bytes(16)
        case .array, .object: try checkContainer(tag, &reader, depth: depth)
        }
    }

    private static func checkContainer(_ tag: Tag, _ reader: inout ByteReader, depth: Int) throws {
        if tag == .object { return try checkObject(&reader, depth: depth) }
        let count = try reader.count()
        for _ in 0..<count { try checkValue(&reader, depth: depth + 1) }
    }

    /// Checks an object's members after its tag. Keys that are ASCII and strictly ascending (as
    /// the encoder writes them) cannot repeat; once an object's keys are not, they are compared
    /// as strings (canonical equivalence), which is how a decoded object would hold them.
    private static func checkObject(_ reader: inout ByteReader, depth: Int) throws {
        let count = try reader.count()
        let first = reader.offset
        var previous: UnsafeRawBufferPointer?
        var seen: Set<String>?
        for i in 0..<count {
            let key = try reader.checkedString()
            if seen == nil {
                if key.allSatisfy({ $0 < 0x80 }), previous.map({ $0.compare(with: key) < 0 }) ?? true {
                    previous = key
                } else {
                    seen = try keys(count: i, from: first, of: reader)
                }
            }
            if seen != nil {
                let name = String(decoding: key, as: UTF8.self)
                guard seen!.insert(name).inserted else { throw reader.failure("duplicate key \(name)") }
            }
            try checkValue(&reader, depth: depth + 1)
        }
    }

    /// The first `count` keys of the object whose members start at `first` (checked already).
    private static func keys(count: Int, from first: Int, of reader: ByteReader) throws -> Set<String> {
        var members = StoredMembers(count: count, bytes: reader.bytes(from: first))
        var keys = Set<String>()
        while let (key, _) = try members.next() { keys.insert(String(decoding: key, as: UTF8.self)) }
        return keys
    }

    static func unzigzag(_ z: UInt64) -> Int64 {
        Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1)
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

extension UnsafeRawBufferPointer {
    /// Whether the bytes are well-formed UTF-8. ASCII, the common case, is checked eight bytes at
    /// a time; the rest scalar by scalar, with no allocation.
    var isValidUTF8: Bool {
        var i = 0
        if let base = baseAddress {
            while i + 8 <= count, base.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 { i += 8 }
        }
        while i < count, self[i] < 0x80 { i += 1 }
        if i == count { return true }
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = self[i...].makeIterator()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
