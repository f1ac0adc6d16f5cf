import CLMDB

/// A cursor over one database, alive only inside ``LMDBTransaction/withCursor(_:_:)``.
///
/// Each positioning call returns whether the cursor now rests on an entry; ``key`` and ``value``
/// lend that entry's bytes until the next call (copy what must be kept).
struct LMDBCursor: ~Copyable {
    private let handle: OpaquePointer
    private let entry: UnsafeMutablePointer<(MDB_val, MDB_val)>

    init(handle: OpaquePointer) {
        self.handle = handle
        self.entry = .allocate(capacity: 1)
        self.entry.initialize(to: (MDB_val(), MDB_val()))
    }

    deinit {
        mdb_cursor_close(handle)
        entry.deallocate()
    }

    private func move(_ op: MDB_cursor_op) throws(LMDBError) -> Bool {
        let code = mdb_cursor_get(handle, &entry.pointee.0, &entry.pointee.1, op)
        if code == MDB_NOTFOUND { return false }
        try lmdbCheck(code, "mdb_cursor_get")
        return true
    }

    borrowing func first() throws(LMDBError) -> Bool { try move(MDB_FIRST) }
    borrowing func last() throws(LMDBError) -> Bool { try move(MDB_LAST) }
    borrowing func next() throws(LMDBError) -> Bool { try move(MDB_NEXT) }
    borrowing func previous() throws(LMDBError) -> Bool { try move(MDB_PREV) }

    /// Positions at the first entry whose key is >= `key`.
    borrowing func seek(atOrAfter key: [UInt8]) throws(LMDBError) -> Bool {
        // LMDB refuses empty keys; every key is >= the empty one.
        if key.isEmpty { return try first() }
        return try withMDBValue(key) { (k: inout MDB_val) throws(LMDBError) -> Bool in
            entry.pointee.0 = k
            let found = try move(MDB_SET_RANGE)
            return found
        }
    }

    /// Positions at the last entry whose key is < `key`, or at the last entry when `key` is nil.
    borrowing func seek(before key: [UInt8]?) throws(LMDBError) -> Bool {
        guard let key else { return try last() }
        if try seek(atOrAfter: key) { return try previous() }
        return try last()
    }

    /// The current entry's key (borrowed).
    var key: UnsafeRawBufferPointer { entry.pointee.0.borrowedBytes }
    /// The current entry's value (borrowed).
    var value: UnsafeRawBufferPointer { entry.pointee.1.borrowedBytes }

    /// Replaces the value of the current entry (`MDB_CURRENT`: no second descent).
    borrowing func replaceCurrent(_ value: [UInt8]) throws(LMDBError) {
        var key = entry.pointee.0
        try withMDBValue(value) { (v: inout MDB_val) throws(LMDBError) in
            try lmdbCheck(mdb_cursor_put(handle, &key, &v, UInt32(MDB_CURRENT)), "mdb_cursor_put(current)")
        }
    }

    /// Deletes the current entry.
    borrowing func deleteCurrent() throws(LMDBError) {
        try lmdbCheck(mdb_cursor_del(handle, 0), "mdb_cursor_del")
    }
}
