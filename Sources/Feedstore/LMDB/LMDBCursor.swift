#if BundledLMDB
internal import CLMDB
#else
internal import CFeedstoreLMDB
#endif

/// A cursor over one database, alive only inside ``LMDBTransaction/withCursor(_:_:)``.
///
/// Each positioning call returns whether the cursor now rests on an entry; ``key`` and ``value``
/// lend that entry's bytes until the next call (copy what must be kept).
struct LMDBCursor: ~Copyable {
    private let handle: OpaquePointer
    private let entry: UnsafeMutablePointer<(MDB_val, MDB_val)>
    private let database: LMDBDatabase
    /// Where the cursor's transaction records its changes, if it does.
    private let log: LMDBMutationLog?
    /// The page size, when every page the cursor reads is the map's own and starts at a multiple
    /// of it in memory (a read-only transaction on a map of the system's page size): then
    /// ``key(offsetBy:)`` may read the leaf page itself.
    private let mapPageSize: Int?

    /// Takes over `handle`, a cursor on `database`; `entry` is storage for the current key and
    /// value that outlives the cursor.
    init(handle: OpaquePointer, entry: UnsafeMutablePointer<(MDB_val, MDB_val)>, database: LMDBDatabase, log: LMDBMutationLog?,
         mapPageSize: Int?) {
        self.handle = handle
        self.entry = entry
        self.database = database
        self.log = log
        self.mapPageSize = mapPageSize
        entry.initialize(to: (MDB_val(), MDB_val()))
    }

    deinit { mdb_cursor_close(handle) }

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

    /// Positions at the first entry whose key is >= `key` (borrowed bytes).
    borrowing func seek(atOrAfter key: UnsafeRawBufferPointer) throws(LMDBError) -> Bool {
        if key.isEmpty { return try first() }
        entry.pointee.0 = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        return try move(MDB_SET_RANGE)
    }

    /// Positions at the entry whose key is exactly `key` (borrowed bytes).
    borrowing func seek(exactly key: UnsafeRawBufferPointer) throws(LMDBError) -> Bool {
        if key.isEmpty { return false }
        entry.pointee.0 = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        return try move(MDB_SET_KEY)
    }

    /// Positions at the entry whose key is exactly `key`.
    borrowing func seek(exactly key: [UInt8]) throws(LMDBError) -> Bool {
        if key.isEmpty { return false }
        return try withMDBValue(key) { (k: inout MDB_val) throws(LMDBError) -> Bool in
            entry.pointee.0 = k
            return try move(MDB_SET_KEY)
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

    /// The key `distance` entries after (or, negative, before) the current one, read from the
    /// leaf page the cursor rests on, without moving the cursor: a jump where stepping costs a
    /// call for each entry. Nil when that entry is on another page, or the cursor's pages may
    /// not be the map's (a write transaction's changed pages are copies): step instead. Reads
    /// LMDB 0.9's page layout on 64-bit machines, with ``LMDBPageCheck``'s sizes: the page
    /// header (flags at 10, the end of the node offsets at 12), then 16-bit node offsets; a
    /// node's header (key size at 6), then its key.
    borrowing func key(offsetBy distance: Int) -> UnsafeRawBufferPointer? {
        guard let pageSize = mapPageSize, let current = entry.pointee.0.mv_data else { return nil }
        let (header, nodeHeader) = (LMDBPageCheck.pageHeaderSize, LMDBPageCheck.nodeHeaderSize)
        let page = UnsafeRawPointer(bitPattern: UInt(bitPattern: current) & ~UInt(pageSize - 1))!
        let flags = page.loadUnaligned(fromByteOffset: 10, as: UInt16.self)
        // A leaf page, not one of fixed-size entries, an overflow page or a sub-page.
        guard flags & 0x7F == LMDBPageCheck.leafFlag else { return nil }
        let lower = Int(page.loadUnaligned(fromByteOffset: 12, as: UInt16.self))
        guard lower >= header, lower <= pageSize else { return nil }
        let count = (lower - header) / 2
        func node(_ i: Int) -> Int { Int(page.loadUnaligned(fromByteOffset: header + 2 * i, as: UInt16.self)) }
        // The cursor's slot: the node whose key is the current key.
        let currentOffset = UnsafeRawPointer(current) - page - nodeHeader
        var index = 0
        while index < count, node(index) != currentOffset { index += 1 }
        let target = index + distance
        guard index < count, target >= 0, target < count else { return nil }
        let offset = node(target)
        guard offset >= lower, offset + nodeHeader <= pageSize else { return nil }
        let size = Int(page.loadUnaligned(fromByteOffset: offset + 6, as: UInt16.self))
        guard offset + nodeHeader + size <= pageSize else { return nil }
        return UnsafeRawBufferPointer(start: page + offset + nodeHeader, count: size)
    }

    /// The current entry's value (borrowed).
    var value: UnsafeRawBufferPointer { entry.pointee.1.borrowedBytes }

    /// Lets `body` modify the current value's bytes in place (same size), without copying them;
    /// `body` returns the range of bytes it changed (nil for none), all that a log records.
    ///
    /// Relies on how LMDB (0.9.x) handles `MDB_CURRENT | MDB_RESERVE` with an unchanged size: it
    /// makes the page writable in this transaction (copy-on-write) and returns the value's
    /// existing bytes there, contents intact. The counted-index tests check every count this
    /// path writes. Afterwards ``value`` lends the modified bytes.
    borrowing func modifyCurrentInPlace(_ body: (UnsafeMutableRawBufferPointer) throws -> Range<Int>?) throws {
        var key = entry.pointee.0
        var value = MDB_val(mv_size: entry.pointee.1.mv_size, mv_data: nil)
        try lmdbCheck(mdb_cursor_put(handle, &key, &value, UInt32(MDB_CURRENT | MDB_RESERVE)), "mdb_cursor_put(reserve)")
        entry.pointee.1 = value
        let bytes = UnsafeMutableRawBufferPointer(start: value.mv_data, count: value.mv_size)
        guard let changed = try body(bytes), let log else { return }
        precondition(changed.lowerBound >= 0 && changed.upperBound <= bytes.count, "a change outside the value")
        log.patch(database, key: entry.pointee.0.borrowedBytes, value: UnsafeRawBufferPointer(bytes), changed: changed)
    }

    /// Deletes the current entry.
    borrowing func deleteCurrent() throws(LMDBError) {
        // Recorded first: the key's bytes are LMDB's, and the delete may move them.
        let key = log.map { _ in entry.pointee.0.copiedBytes }
        try lmdbCheck(mdb_cursor_del(handle, 0), "mdb_cursor_del")
        if let log, let key { key.withUnsafeBytes { log.delete(database, key: $0) } }
    }
}
