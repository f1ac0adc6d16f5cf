internal import CFeedstoreLMDB

/// Every change one write transaction makes, as LMDB operations on named databases: what a log of
/// commits ahead of LMDB keeps so that the commit can be made again, exactly, on the snapshot the
/// transaction began from (``replay(_:in:)``).
///
/// A transaction records into it when it is begun with one (``LMDBTransaction/init(environment:readOnly:log:)``):
/// puts (those of a cursor's in-place changes too, with the bytes they end with), deletes,
/// drops, and the creation of named databases. Databases are named, not numbered: a database's
/// handle (`MDB_dbi`) is local to the environment that opened it.
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
    }

    private let environment: LMDBEnvironment
    private(set) var bytes: [UInt8] = []
    /// A transaction that changes more than this stops recording (``overflowed``): a bulk load is
    /// cheaper to sync in LMDB's own way than to write twice.
    let limit: Int
    /// Whether the transaction changed more than ``limit``; the record is then incomplete.
    private(set) var overflowed = false
    private var names: [String] = []
    private var numbers: [MDB_dbi: UInt16] = [:]

    init(environment: LMDBEnvironment, limit: Int = .max) {
        self.environment = environment
        self.limit = limit
    }

    /// Whether the transaction changed anything.
    var isEmpty: Bool { bytes.isEmpty && !overflowed }

    /// Stops recording once the record passes its limit.
    private func checkLimit() {
        if bytes.count > limit {
            overflowed = true
            bytes = []
        }
    }

    /// The record: the name table, then the operations.
    var encoded: [UInt8] {
        var out: [UInt8] = []
        appendLength(names.count, to: &out)
        for name in names { appendOperand(Array(name.utf8), to: &out) }
        return out + bytes
    }

    func put(_ db: LMDBDatabase, key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard !overflowed else { return }
        operation(.put, db)
        appendOperand(key, to: &bytes)
        appendOperand(value, to: &bytes)
        checkLimit()
    }

    func delete(_ db: LMDBDatabase, key: UnsafeRawBufferPointer) {
        guard !overflowed else { return }
        operation(.delete, db)
        appendOperand(key, to: &bytes)
        checkLimit()
    }

    func drop(_ db: LMDBDatabase, delete: Bool) {
        guard !overflowed else { return }
        operation(delete ? .dropAndDelete : .drop, db)
        // A deleted database's handle may name another database made later in the transaction.
        if delete { numbers[db.dbi] = nil }
    }

    func create(named name: String) {
        guard !overflowed else { return }
        bytes.append(Kind.create.rawValue)
        appendOperand(Array(name.utf8), to: &bytes)
    }

    private func operation(_ kind: Kind, _ db: LMDBDatabase) {
        let number = numbers[db.dbi] ?? {
            let number = UInt16(names.count)
            names.append(environment.name(of: db))
            numbers[db.dbi] = number
            return number
        }()
        bytes.append(kind.rawValue)
        withUnsafeBytes(of: number.littleEndian) { bytes += $0 }
    }

    private func appendLength(_ count: Int, to out: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(count).littleEndian) { out += $0 }
    }

    private func appendOperand(_ operand: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        appendLength(operand.count, to: &out)
        out += operand
    }

    private func appendOperand(_ operand: [UInt8], to out: inout [UInt8]) {
        operand.withUnsafeBytes { appendOperand($0, to: &out) }
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
