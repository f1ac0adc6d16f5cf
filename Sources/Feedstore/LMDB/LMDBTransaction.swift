#if BundledLMDB
internal import CLMDB
#else
internal import CFeedstoreLMDB
#endif
import Foundation

/// One LMDB transaction. It is `~Copyable`: it ends exactly once, by the consuming ``commit()``
/// or ``abort()``, or by `deinit` (which aborts), so no code can use it after it ended.
///
/// Thread rules (lmdb.h): a transaction and its cursors are used by one thread at a time; a write
/// transaction begins and ends on the same thread (the store's writer thread) with no `await`
/// in between. Bytes borrowed from it (``withValue(_:key:_:)``, cursor reads) are valid only
/// inside the closure that receives them; everything returned is a copy.
struct LMDBTransaction: ~Copyable {
    let handle: OpaquePointer
    let isReadOnly: Bool
    // Held unretained, so that the transaction stays trivially destroyed (`discard self`): the
    // environment outlives its transactions, and the caller that passes a log keeps it.
    private let unmanagedEnvironment: Unmanaged<LMDBEnvironment>
    private let unmanagedLog: Unmanaged<LMDBMutationLog>?
    private var environment: LMDBEnvironment { unmanagedEnvironment.takeUnretainedValue() }
    /// Where a write transaction records its changes, when it was begun with a log.
    var log: LMDBMutationLog? { unmanagedLog?.takeUnretainedValue() }

    /// Begins a top-level transaction; a write transaction begun with `log` records every change
    /// it makes there.
    init(environment: LMDBEnvironment, readOnly: Bool, log: LMDBMutationLog? = nil) throws(LMDBError) {
        self.handle = readOnly ? try environment.beginRead() : try environment.beginWrite()
        self.isReadOnly = readOnly
        self.unmanagedEnvironment = .passUnretained(environment)
        self.unmanagedLog = readOnly ? nil : log.map { .passUnretained($0) }
    }

    /// The system's memory page size: the map starts at a multiple of it.
    static let systemPageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// The transaction's id: for a write transaction, the id its commit will have.
    var id: UInt64 { UInt64(mdb_txn_id(handle)) }

    /// Commits; a read transaction's commit keeps the databases it opened for the environment
    /// (an abort or a drop closes them).
    consuming func commit() throws(LMDBError) {
        let txn = handle, environment = self.environment, readOnly = isReadOnly
        discard self
        let code = mdb_txn_commit(txn)
        if !readOnly { environment.endWrite() }
        try lmdbCheck(code, "mdb_txn_commit")
        #if canImport(Darwin)
        // A commit LMDB syncs (full durability) is flushed from the drive's cache before it
        // counts as done: LMDB's own sync there is fsync.
        if !readOnly, environment.flags.isDisjoint(with: [.noSync, .noMetaSync, .readOnly]) { try environment.flushDriveCache() }
        #endif
    }

    consuming func abort() {
        Self.end(handle, readOnly: isReadOnly, in: environment)
        discard self
    }

    deinit { Self.end(handle, readOnly: isReadOnly, in: environment) }

    /// Ends a transaction without committing: a read's handle is kept for the next read.
    private static func end(_ txn: OpaquePointer, readOnly: Bool, in environment: LMDBEnvironment) {
        if readOnly {
            environment.endRead(txn)
        } else {
            mdb_txn_abort(txn)
            environment.endWrite()
        }
    }

    // MARK: Databases

    /// Opens a named database (the unnamed main database for `""`); `nil` when it does not exist
    /// and `create` is false.
    borrowing func openDatabase(named name: String, create: Bool) throws(LMDBError) -> LMDBDatabase? {
        var dbi: MDB_dbi = 0
        func open(_ flags: UInt32) -> Int32 {
            name.isEmpty ? mdb_dbi_open(handle, nil, flags, &dbi) : mdb_dbi_open(handle, name, flags, &dbi)
        }
        var code = open(0)
        if code == MDB_NOTFOUND && create {
            code = open(UInt32(MDB_CREATE))
            if code == 0 { log?.create(named: name) }
        }
        if code == MDB_NOTFOUND { return nil }
        try lmdbCheck(code, "mdb_dbi_open(\(name))")
        let db = LMDBDatabase(dbi: dbi)
        environment.register(db, named: name)
        return db
    }

    /// Deletes the database's contents, and with `delete` the database itself.
    borrowing func drop(_ db: LMDBDatabase, delete: Bool) throws(LMDBError) {
        try lmdbCheck(mdb_drop(handle, db.dbi, delete ? 1 : 0), "mdb_drop")
        log?.drop(db, delete: delete)
    }

    borrowing func statistics(_ db: LMDBDatabase) throws(LMDBError) -> DatabaseStatistics {
        var stat = MDB_stat()
        try lmdbCheck(mdb_stat(handle, db.dbi, &stat), "mdb_stat")
        return DatabaseStatistics(entries: stat.ms_entries, depth: Int(stat.ms_depth),
                                  branchPages: stat.ms_branch_pages, leafPages: stat.ms_leaf_pages,
                                  overflowPages: stat.ms_overflow_pages, pageSize: Int(stat.ms_psize))
    }

    /// Pages in LMDB's free list: written once, now free for reuse (what `mdb_stat -f` counts).
    /// Each value of the free database (number 0) is a list of page numbers led by its length.
    borrowing func freePages() throws(LMDBError) -> Int {
        var cursor: OpaquePointer?
        try lmdbCheck(mdb_cursor_open(handle, 0, &cursor), "mdb_cursor_open(free)")
        defer { mdb_cursor_close(cursor) }
        var key = MDB_val(), value = MDB_val()
        var pages = 0
        var code = mdb_cursor_get(cursor, &key, &value, MDB_FIRST)
        while code == 0 {
            if value.mv_size >= MemoryLayout<Int>.size { pages += value.mv_data!.loadUnaligned(as: Int.self) }
            code = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)
        }
        if code != MDB_NOTFOUND { try lmdbCheck(code, "mdb_cursor_get(free)") }
        return pages
    }

    // MARK: Reads

    /// A copy of the value stored under `key`, or `nil`.
    borrowing func get(_ db: LMDBDatabase, key: [UInt8]) throws(LMDBError) -> [UInt8]? {
        var value = MDB_val()
        let code = withMDBValue(key) { k in mdb_get(handle, db.dbi, &k, &value) }
        if code == MDB_NOTFOUND { return nil }
        try lmdbCheck(code, "mdb_get")
        return value.copiedBytes
    }

    /// Lends the value stored under `key` to `body`; `nil` when the key is absent.
    borrowing func withValue<R>(_ db: LMDBDatabase, key: [UInt8], _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard let value = try key.withUnsafeBytes({ try borrowedValue(db, key: $0) }) else { return nil }
        return try body(value)
    }

    /// The value stored under `key`, borrowed: valid until the transaction ends or next writes.
    borrowing func borrowedValue(_ db: LMDBDatabase, key: UnsafeRawBufferPointer) throws(LMDBError) -> UnsafeRawBufferPointer? {
        var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var value = MDB_val()
        let code = mdb_get(handle, db.dbi, &k, &value)
        if code == MDB_NOTFOUND { return nil }
        try lmdbCheck(code, "mdb_get")
        return value.borrowedBytes
    }

    // MARK: Writes

    /// Stores `value` under `key`. With `noOverwrite`, returns false (and writes nothing) when the
    /// key already exists.
    @discardableResult
    borrowing func put(_ db: LMDBDatabase, key: [UInt8], value: [UInt8], noOverwrite: Bool = false) throws(LMDBError) -> Bool {
        let code = withMDBValue(key) { k in
            withMDBValue(value) { v in mdb_put(handle, db.dbi, &k, &v, noOverwrite ? UInt32(MDB_NOOVERWRITE) : 0) }
        }
        if noOverwrite && code == MDB_KEYEXIST { return false }
        try lmdbCheck(code, "mdb_put")
        logPut(db, key: key, value: value)
        return true
    }

    private borrowing func logPut(_ db: LMDBDatabase, key: [UInt8], value: [UInt8]) {
        guard let log else { return }
        key.withUnsafeBytes { k in value.withUnsafeBytes { v in log.put(db, key: k, value: v) } }
    }

    /// Stores `value` under `key` unless the key exists; then returns a copy of the existing value
    /// and writes nothing. One tree descent for "insert, or tell me what is there".
    borrowing func putIfAbsent(_ db: LMDBDatabase, key: [UInt8], value: [UInt8]) throws(LMDBError) -> [UInt8]? {
        var existing: [UInt8]?
        let code = withMDBValue(key) { k in
            withMDBValue(value) { v in
                let code = mdb_put(handle, db.dbi, &k, &v, UInt32(MDB_NOOVERWRITE))
                // On MDB_KEYEXIST, LMDB points `v` at the value already stored.
                if code == MDB_KEYEXIST { existing = v.copiedBytes }
                return code
            }
        }
        if code == MDB_KEYEXIST { return existing }
        try lmdbCheck(code, "mdb_put")
        logPut(db, key: key, value: value)
        return nil
    }

    /// Stores `value` under `key` when `key` sorts after every key of `db`, and returns false,
    /// writing nothing, when it does not. LMDB then adds the entry at the end of the tree
    /// without searching it, which saves about a third of a put for keys written in ascending
    /// order (journal sequence numbers, sequential ids).
    borrowing func append(_ db: LMDBDatabase, key: [UInt8], value: [UInt8]) throws(LMDBError) -> Bool {
        let code = withMDBValue(key) { k in
            withMDBValue(value) { v in mdb_put(handle, db.dbi, &k, &v, UInt32(MDB_APPEND)) }
        }
        if code == MDB_KEYEXIST { return false }
        try lmdbCheck(code, "mdb_put")
        logPut(db, key: key, value: value)
        return true
    }

    /// Stores `value` under `key`, appending (see ``append(_:key:value:)``) when `key` sorts last:
    /// for trees whose keys mostly arrive in ascending order.
    borrowing func putAppending(_ db: LMDBDatabase, key: [UInt8], value: [UInt8]) throws(LMDBError) {
        if try !append(db, key: key, value: value) { try put(db, key: key, value: value) }
    }

    /// Deletes `key`; returns whether it was present.
    @discardableResult
    borrowing func delete(_ db: LMDBDatabase, key: [UInt8]) throws(LMDBError) -> Bool {
        let code = withMDBValue(key) { k in mdb_del(handle, db.dbi, &k, nil) }
        if code == MDB_NOTFOUND { return false }
        try lmdbCheck(code, "mdb_del")
        if let log { key.withUnsafeBytes { log.delete(db, key: $0) } }
        return true
    }

    // MARK: Cursors

    /// Opens a cursor on `db` for the duration of `body`; it is closed when `body` returns.
    borrowing func withCursor<R>(_ db: LMDBDatabase, _ body: (borrowing LMDBCursor) throws -> R) throws -> R {
        var raw: OpaquePointer?
        try lmdbCheck(mdb_cursor_open(handle, db.dbi, &raw), "mdb_cursor_open")
        // The cursor's current entry lives on the stack: no allocation per cursor.
        return try withUnsafeTemporaryAllocation(of: (MDB_val, MDB_val).self, capacity: 1) { entry in
            let cursor = LMDBCursor(handle: raw!, entry: entry.baseAddress!, database: db, log: log,
                                    mapPageSize: isReadOnly && environment.pageSize == Self.systemPageSize ? environment.pageSize : nil)
            return try body(cursor)
        }
    }
}
