#if BundledLMDB
internal import CLMDB
#else
internal import CFeedstoreLMDB
#endif

/// Every change one write transaction makes, as LMDB operations on named databases: what a log of
/// commits ahead of LMDB keeps so that the commit can be made again, exactly, on the snapshot the
/// transaction began from (``replay(_:in:)``).
///
/// A transaction records into it when it is begun with one (``LMDBTransaction/init(environment:readOnly:log:)``):
/// puts, a cursor's in-place changes (as the bytes changed, ``Kind/patch``: a counted index's
/// counts are a few bytes of a node of kilobytes), deletes, drops, and the creation of named
/// databases. Databases are named, not numbered: a database's handle (`MDB_dbi`) is local to the
/// environment that opened it.
///
/// Encoding: the name table (a count, then each name as an operand), so that a name is written
/// once however many operations use it; then the operations in order, each a kind byte, for every
/// kind but ``Kind/create`` the database's number in the name table (two bytes), and the kind's
/// operands. An operand is a four-byte little-endian length and its bytes.
final class LMDBMutationLog {
    enum Kind: UInt8 {
        /// Key, value: stores the value under the key.
        case put = 1
        /// Key: deletes it.
        case delete = 2
        /// Empties the database (and deletes it, for ``dropAndDelete``).
        case drop = 3
        case dropAndDelete = 4
        /// Name: creates the named database if it does not exist (or opens the main one for "").
        case create = 5
        /// Key, offset (four bytes, little-endian), bytes: overwrites the value's bytes from the
        /// offset on, keeping its size.
        case patch = 6
    }

    private let environment: LMDBEnvironment
    /// What has been recorded. In a struct, so that recording an operation is one access to the
    /// log's state, not one for each of its parts.
    private var recording: Recording

    init(environment: LMDBEnvironment, limit: Int = .max) {
        self.environment = environment
        recording = Recording(limit: limit)
    }

    /// Whether the transaction changed more than the log's limit; the record is then incomplete.
    var overflowed: Bool { recording.overflowed }
    /// The operations, in order: the record after its name table.
    var bytes: [UInt8] { recording.bytes }
    /// Whether the transaction changed anything.
    var isEmpty: Bool { recording.bytes.isEmpty && !recording.overflowed }

    /// The record: the name table, then the operations.
    var encoded: [UInt8] { nameTable + recording.bytes }

    /// The record's first part, before the operations (``bytes``).
    var nameTable: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(4 + recording.names.reduce(0) { $0 + 4 + $1.count })
        Recording.appendLength(recording.names.count, to: &out)
        for name in recording.names { Recording.appendOperand(name, to: &out) }
        return out
    }

    func put(_ db: LMDBDatabase, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        recording.record(.put, db, in: environment, key: key, value: value)
    }

    /// Records that `value`'s bytes in `changed` were overwritten in place, the rest kept.
    func patch(_ db: LMDBDatabase, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, changed: Range<Int>) {
        recording.record(.patch, db, in: environment, key: key, offset: changed.lowerBound, value: UnsafeRawBufferPointer(rebasing: value[changed]))
    }

    func delete(_ db: LMDBDatabase, key: UnsafeRawBufferPointer) {
        recording.record(.delete, db, in: environment, key: key)
    }

    func drop(_ db: LMDBDatabase, delete: Bool) {
        recording.record(delete ? .dropAndDelete : .drop, db, in: environment)
        // A deleted database's handle may name another database made later in the transaction.
        if delete { recording.forgetNumber(of: db) }
    }

    func create(named name: String) {
        recording.create(named: name)
    }

    private struct Recording {
        /// A transaction that changes more than this stops recording (``overflowed``): a bulk
        /// load is cheaper to sync in LMDB's own way than to write twice.
        let limit: Int
        var bytes: [UInt8] = []
        var overflowed = false
        /// The name table, in UTF-8.
        var names: [[UInt8]] = []
        /// Each database's number in the name table, by handle (``unnumbered`` for none yet):
        /// handles are small integers.
        var numbers: [UInt16] = []
        static let unnumbered = UInt16.max

        init(limit: Int) {
            self.limit = limit
            // A one-row commit records under a kilobyte: room for it without growing.
            bytes.reserveCapacity(4_096)
        }

        /// Appends an operation: its kind, its database's number, then `key`, `offset` (for a
        /// patch) and `value`, those given.
        mutating func record(_ kind: Kind, _ db: LMDBDatabase, in environment: LMDBEnvironment, key: UnsafeRawBufferPointer? = nil,
                             offset: Int? = nil, value: UnsafeRawBufferPointer? = nil)
        {
            guard !overflowed else { return }
            let handle = Int(db.dbi)
            if handle >= numbers.count { numbers += repeatElement(Self.unnumbered, count: handle + 1 - numbers.count) }
            var number = numbers[handle]
            if number == Self.unnumbered {
                number = UInt16(names.count)
                names.append(environment.name(of: db))
                numbers[handle] = number
            }
            bytes.append(kind.rawValue)
            bytes.append(UInt8(truncatingIfNeeded: number))
            bytes.append(UInt8(truncatingIfNeeded: number >> 8))
            if let key { Self.appendOperand(key, to: &bytes) }
            if let offset { Self.appendLength(offset, to: &bytes) }
            if let value { Self.appendOperand(value, to: &bytes) }
            // Stops recording once the record passes its limit.
            if bytes.count > limit {
                overflowed = true
                bytes = []
            }
        }

        mutating func forgetNumber(of db: LMDBDatabase) {
            if Int(db.dbi) < numbers.count { numbers[Int(db.dbi)] = Self.unnumbered }
        }

        mutating func create(named name: String) {
            guard !overflowed else { return }
            bytes.append(Kind.create.rawValue)
            Self.appendOperand(Array(name.utf8), to: &bytes)
        }

        static func appendLength(_ count: Int, to out: inout [UInt8]) {
            withUnsafeBytes(of: UInt32(count).littleEndian) { out += $0 }
        }

        static func appendOperand(_ operand: UnsafeRawBufferPointer, to out: inout [UInt8]) {
            appendLength(operand.count, to: &out)
            out += operand
        }

        static func appendOperand(_ operand: [UInt8], to out: inout [UInt8]) {
            operand.withUnsafeBytes { appendOperand($0, to: &out) }
        }
    }

    /// A record that does not decode.
    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    /// Makes the changes `record` holds in `txn`, in order.
    static func replay(_ record: [UInt8], in txn: borrowing LMDBTransaction) throws {
        var reader = Reader(bytes: record)
        let names = try (0..<reader.length()).map { _ in String(decoding: record[try reader.operand()], as: UTF8.self) }
        var databases: [Int: LMDBDatabase] = [:]
        func database(_ number: Int) throws -> LMDBDatabase {
            if let db = databases[number] { return db }
            guard number < names.count else { throw Malformed(description: "database number \(number) of \(names.count)") }
            guard let db = try txn.openDatabase(named: names[number], create: false) else {
                throw Malformed(description: "database \(names[number]) does not exist")
            }
            databases[number] = db
            return db
        }
        while let raw = reader.byte() {
            guard let kind = Kind(rawValue: raw) else { throw Malformed(description: "operation kind \(raw)") }
            switch kind {
            case .create:
                _ = try txn.openDatabase(named: String(decoding: record[try reader.operand()], as: UTF8.self), create: true)
            case .put:
                let db = try database(try reader.number())
                let key = Array(record[try reader.operand()]), value = Array(record[try reader.operand()])
                try txn.put(db, key: key, value: value)
            case .patch:
                let db = try database(try reader.number())
                let key = Array(record[try reader.operand()]), offset = try reader.length(), changed = record[try reader.operand()]
                guard var value = try txn.get(db, key: key) else { throw Malformed(description: "a patch of a key that is absent") }
                guard offset + changed.count <= value.count else {
                    throw Malformed(description: "a patch of bytes \(offset)..<\(offset + changed.count) of a value of \(value.count)")
                }
                value.replaceSubrange(offset..<(offset + changed.count), with: changed)
                try txn.put(db, key: key, value: value)
            case .delete:
                let db = try database(try reader.number())
                guard try txn.delete(db, key: Array(record[try reader.operand()])) else {
                    throw Malformed(description: "a delete of a key that is absent")
                }
            case .drop, .dropAndDelete:
                let number = try reader.number()
                try txn.drop(try database(number), delete: kind == .dropAndDelete)
                if kind == .dropAndDelete { databases[number] = nil }
            }
        }
    }

    /// Reads a record's parts.
    private struct Reader {
        let bytes: [UInt8]
        var at = 0

        mutating func byte() -> UInt8? {
            guard at < bytes.count else { return nil }
            defer { at += 1 }
            return bytes[at]
        }

        mutating func length() throws -> Int {
            guard at + 4 <= bytes.count else { throw Malformed(description: "a length past the record's end") }
            defer { at += 4 }
            return (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) }
        }

        mutating func number() throws -> Int {
            guard at + 2 <= bytes.count else { throw Malformed(description: "a database number past the record's end") }
            defer { at += 2 }
            return Int(bytes[at]) | Int(bytes[at + 1]) << 8
        }

        mutating func operand() throws -> Range<Int> {
            let count = try length()
            guard at + count <= bytes.count else { throw Malformed(description: "an operand past the record's end") }
            defer { at += count }
            return at..<(at + count)
        }
    }
}
