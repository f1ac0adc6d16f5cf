/// The persisted positions of named journal consumers (`feedstore.cursors`: name → the last
/// sequence the consumer acknowledged).
struct DurableCursors {
    let core: StoreCore

    func position(of name: String, in txn: borrowing LMDBTransaction) throws -> UInt64? {
        try MetaKey.decodeUInt64(try txn.get(core.system.cursors, key: Array(name.utf8)), what: "cursor \(name)")
    }

    func setPosition(_ sequence: UInt64, of name: String, in txn: borrowing LMDBTransaction) throws {
        try txn.put(core.system.cursors, key: Array(name.utf8), value: MetaKey.encode(sequence))
    }

    func remove(_ name: String, in txn: borrowing LMDBTransaction) throws {
        try txn.delete(core.system.cursors, key: Array(name.utf8))
    }

    func all(in txn: borrowing LMDBTransaction) throws -> [(name: String, position: UInt64)] {
        try txn.withCursor(core.system.cursors) { cursor in
            var result: [(String, UInt64)] = []
            var found = try cursor.first()
            while found {
                let name = String(decoding: cursor.key, as: UTF8.self)
                guard let position = try MetaKey.decodeUInt64(Array(cursor.value), what: "cursor \(name)") else { break }
                result.append((name, position))
                found = try cursor.next()
            }
            return result
        }
    }

    func slowestPosition(in txn: borrowing LMDBTransaction) throws -> UInt64? {
        try all(in: txn).map(\.position).min()
    }
}
