import Foundation

/// One value in stored record bytes that ``RecordCodec/validate(_:field:)`` accepted, read where
/// it lies: `bytes` runs from the value's tag to the end of the record. Nothing is copied until a
/// value is asked for. The reads stay bounds-checked, so bytes that were not validated give an
/// error, never a wild read.
struct StoredValue {
    let bytes: UnsafeRawBufferPointer

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// The value starting `offset` bytes into `bytes`.
    init(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        self.bytes = UnsafeRawBufferPointer(rebasing: bytes[offset...])
    }

    /// A reader just past the tag.
    private var payload: ByteReader {
        var reader = ByteReader(bytes)
        reader.skip(1)
        return reader
    }

    @inline(__always)
    func tag() throws -> RecordCodec.Tag {
        guard let first = bytes.first, let tag = RecordCodec.Tag.named(first) else {
            throw ByteReader(bytes).failure("unknown value tag")
        }
        return tag
    }

    /// The name of the value's kind, as ``FieldValue/kindName`` names it.
    var kindName: String { (try? tag().kindName) ?? "invalid" }

    /// The value when it is a scalar read without allocating; `.other` for strings, bytes,
    /// arrays and objects.
    func scalar() throws -> StoredScalar {
        var reader = payload
        switch try tag() {
        case .null: return .null
        case .falseValue: return .bool(false)
        case .trueValue: return .bool(true)
        case .int: return .int(RecordCodec.unzigzag(try reader.varint()))
        case .uint: return .uint(try reader.varint())
        case .double: return .double(Double(bitPattern: try reader.fixed64()))
        case .date: return .date(Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.fixed64())))
        case .uuid: return .uuid(try reader.uuid())
        case .string, .bytes, .array, .object: return .other
        }
    }

    /// The string, when the value is one.
    func string() throws -> String? {
        guard try tag() == .string else { return nil }
        var reader = payload
        // Validated already: decoding cannot repair anything, it only copies.
        return String(decoding: try reader.bytes(try reader.count()), as: UTF8.self)
    }

    /// The string's UTF-8 bytes, borrowed from the record, when the value is a string.
    func utf8() throws -> UnsafeRawBufferPointer? {
        guard try tag() == .string else { return nil }
        var reader = payload
        return try reader.bytes(try reader.count())
    }

    /// The raw bytes, when the value holds bytes.
    func rawBytes() throws -> [UInt8]? {
        guard try tag() == .bytes else { return nil }
        var reader = payload
        return Array(try reader.bytes(try reader.count()))
    }

    /// The elements, when the value is an array.
    func items() throws -> StoredItems? {
        guard try tag() == .array else { return nil }
        var reader = payload
        let count = try reader.count()
        return StoredItems(remaining: count, bytes: reader.rest)
    }

    /// The members, when the value is an object.
    func members() throws -> StoredMembers? {
        guard try tag() == .object else { return nil }
        var reader = payload
        let count = try reader.count()
        return StoredMembers(count: count, bytes: reader.rest)
    }

    /// The value's length in bytes: where the next one starts.
    func length() throws -> Int {
        var reader = ByteReader(bytes)
        try reader.skipValue()
        return reader.offset
    }

    /// The value as a ``FieldValue`` tree, for the readers that want one.
    func fieldValue() throws -> FieldValue {
        switch try scalar() {
        case .null: return .null
        case let .bool(b): return .bool(b)
        case let .int(i): return .int(i)
        case let .uint(u): return .uint(u)
        case let .double(d): return .double(d)
        case let .date(d): return .date(d)
        case let .uuid(u): return .uuid(u)
        case .other: break
        }
        if let s = try string() { return .string(s) }
        if let b = try rawBytes() { return .bytes(b) }
        if var items = try items() {
            var values: [FieldValue] = []
            values.reserveCapacity(items.remaining)
            while let item = try items.next() { values.append(try item.fieldValue()) }
            return .array(values)
        }
        guard var members = try members() else { throw ByteReader(bytes).failure("unknown value tag") }
        var values: [String: FieldValue] = [:]
        values.reserveCapacity(members.count)
        while let (key, value) = try members.next() { values[String(decoding: key, as: UTF8.self)] = try value.fieldValue() }
        return .object(values)
    }
}

/// A stored value that is read without allocating.
enum StoredScalar {
    case null, bool(Bool), int(Int64), uint(UInt64), double(Double), date(Date), uuid(UUID)
    /// A string, bytes, an array or an object.
    case other
}

/// The elements of a stored array, read in order.
struct StoredItems {
    /// The elements not read yet.
    private(set) var remaining: Int
    /// From the next element on.
    private var bytes: UnsafeRawBufferPointer

    init(remaining: Int, bytes: UnsafeRawBufferPointer) {
        self.remaining = remaining
        self.bytes = bytes
    }

    /// The next element, without moving past it.
    var current: StoredValue? { remaining > 0 ? StoredValue(bytes) : nil }

    /// The next element, moving past it.
    mutating func next() throws -> StoredValue? {
        guard remaining > 0 else { return nil }
        let item = StoredValue(bytes)
        bytes = UnsafeRawBufferPointer(rebasing: bytes[try item.length()...])
        remaining -= 1
        return item
    }
}

/// The members of a stored object: key bytes (valid UTF-8) and values, in stored order.
struct StoredMembers {
    let count: Int
    /// From the first member on.
    private let start: UnsafeRawBufferPointer
    private var bytes: UnsafeRawBufferPointer
    private var remaining: Int

    init(count: Int, bytes: UnsafeRawBufferPointer) {
        self.count = count
        start = bytes
        self.bytes = bytes
        remaining = count
    }

    /// The next member, moving past it.
    mutating func next() throws -> (key: UnsafeRawBufferPointer, value: StoredValue)? {
        guard remaining > 0 else { return nil }
        var reader = ByteReader(bytes)
        let key = try reader.bytes(try reader.count())
        let value = StoredValue(reader.rest)
        bytes = UnsafeRawBufferPointer(rebasing: bytes[(reader.offset + (try value.length()))...])
        remaining -= 1
        return (key, value)
    }

    /// The value of the member whose key equals `key` (as strings compare: canonical
    /// equivalence), or nil.
    func value(forKey key: String) throws -> StoredValue? {
        var members = self
        members.bytes = start
        members.remaining = count
        var key = key
        return try key.withUTF8 { wanted in
            let wantedIsASCII = wanted.allSatisfy { $0 < 0x80 }
            while let (candidate, value) = try members.next() {
                if candidate.elementsEqual(wanted) { return value }
                // Bytes that differ name the same key only when one is not ASCII.
                if !wantedIsASCII || !candidate.allSatisfy({ $0 < 0x80 }),
                   String(decoding: candidate, as: UTF8.self) == String(decoding: wanted, as: UTF8.self) { return value }
            }
            return nil
        }
    }

    /// Every key, in stored order.
    func keys() throws -> [String] {
        var members = self
        members.bytes = start
        members.remaining = count
        var keys: [String] = []
        while let (key, _) = try members.next() { keys.append(String(decoding: key, as: UTF8.self)) }
        return keys
    }
}

extension RecordCodec.Tag {
    /// The name of the kind of the values with this tag, as ``FieldValue/kindName`` names it.
    var kindName: String {
        switch self {
        case .null: "null"
        case .falseValue, .trueValue: "bool"
        case .int: "int"
        case .uint: "uint"
        case .double: "double"
        case .date: "date"
        case .string: "string"
        case .bytes: "bytes"
        case .uuid: "uuid"
        case .array: "array"
        case .object: "object"
        }
    }
}
