#if BundledLMDB
internal import CLMDB
#else
internal import CFeedstoreLMDB
#endif
import Foundation

/// An open LMDB environment (the `data.mdb` and `lock.mdb` files of one store directory).
///
/// Thread rules: the handle itself may be used from any thread (it is opened with `MDB_NOTLS`, so
/// read transactions are not tied to threads); transactions and cursors follow their own rules
/// (see ``LMDBTransaction``). `setMapSize` requires that this process has no open transaction;
/// the store guarantees it with its map lock.
final class LMDBEnvironment: @unchecked Sendable {
    struct Flags: OptionSet, Sendable {
        let rawValue: UInt32
        static let readOnly = Flags(rawValue: UInt32(MDB_RDONLY))
        static let noMetaSync = Flags(rawValue: UInt32(MDB_NOMETASYNC))
        static let noSync = Flags(rawValue: UInt32(MDB_NOSYNC))
        static let noThreadLocalStorage = Flags(rawValue: UInt32(MDB_NOTLS))
        static let noReadAhead = Flags(rawValue: UInt32(MDB_NORDAHEAD))
        static let noLock = Flags(rawValue: UInt32(MDB_NOLOCK))
        /// Writes change pages in the map itself, with no write call for each page. A stray
        /// write into the map, or a crash of the operating system, can damage the file.
        static let writeMap = Flags(rawValue: UInt32(MDB_WRITEMAP))
    }

    struct Info: Sendable {
        var mapSize: Int
        var lastPageNumber: Int
        var lastTransactionID: Int
        var maxReaders: Int
        var readersUsed: Int
    }

    let handle: OpaquePointer
    let path: String
    /// The name of each database opened, by handle, in UTF-8 (for ``LMDBMutationLog``, which
    /// names them).
    private var databaseNames: [MDB_dbi: [UInt8]] = [:]
    private let namesLock = NSLock()
    /// The page size of the environment (`mdb_env_stat`).
    let pageSize: Int
    private(set) var isClosed = false
    /// Read transactions ended with `mdb_txn_reset`, which keep their slot in the reader table,
    /// so that the next read renews one without taking LMDB's reader-table mutex.
    private var idleReaders: [OpaquePointer] = []
    private let idleReadersLock = NSLock()
    static let maximumIdleReaders = 8
    /// Feedstore's gates in front of LMDB's writer and reader-table mutexes, when those are not
    /// robust (``LMDBMutexGate``); nil otherwise. Let go on close, with the lock file's head
    /// mapped for them.
    private var writerGate: LMDBMutexGate?
    private var readersGate: LMDBMutexGate?
    /// The gates' files, in the environment's directory (made only by the bundled build).
    static let gateFileNames = ["writer.lock", "readers.lock"]
    /// Whether the process holds no lock on the environment's files (``suspend()``); guarded by
    /// `idleReadersLock`. No transaction begins then.
    private var suspended = false
    /// A descriptor of `lock.mdb` opened by the first ``suspend()``, through which the process
    /// lets go of its locks on the file and takes them back; closed only after the environment,
    /// since closing a descriptor of the file lets go of the process's locks on it.
    private var lockFileDescriptor: Int32 = -1
    private var lockFileIsWritable = false

    /// The version of the LMDB library linked in (`mdb_version`), such as "0.9.24".
    static let libraryVersion: String = {
        var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
        _ = mdb_version(&major, &minor, &patch)
        return "\(major).\(minor).\(patch)"
    }()

    /// Whether a mutex of LMDB's whose holder dies is recovered by the next process to take it
    /// (robust POSIX mutexes; System V semaphores, undone by the system), or stays locked (the
    /// bundled build: Apple's systems have no robust mutexes).
    static let mutexesAreRobust: Bool = {
        #if BundledLMDB
        return false
        #else
        return true
        #endif
    }()

    /// How the LMDB compiled in locks between processes: the bundled build defines
    /// `MDB_USE_POSIX_MUTEX` and `MDB_USE_ROBUST=0` (Apple's systems have no robust mutexes);
    /// the system's LMDB keeps its platform's default.
    static let lockImplementation: String = {
        #if BundledLMDB
        return "process-shared POSIX mutexes, not robust"
        #elseif os(Linux)
        return "process-shared POSIX mutexes, robust"
        #else
        return "System V semaphores"
        #endif
    }()

    /// Opens (creating if allowed) the environment in directory `path`.
    init(path: String, flags: Flags, mapSize: Int, maxDatabases: UInt32, maxReaders: UInt32, mode: mode_t) throws(LMDBError) {
        var env: OpaquePointer?
        try lmdbCheck(mdb_env_create(&env), "mdb_env_create")
        guard let env else { throw LMDBError(code: EINVAL, operation: "mdb_env_create") }
        do {
            try lmdbCheck(mdb_env_set_maxdbs(env, maxDatabases), "mdb_env_set_maxdbs")
            try lmdbCheck(mdb_env_set_maxreaders(env, maxReaders), "mdb_env_set_maxreaders")
            try lmdbCheck(mdb_env_set_mapsize(env, mapSize), "mdb_env_set_mapsize")
            try lmdbCheck(mdb_env_open(env, path, flags.union(.noThreadLocalStorage).rawValue, mode), "mdb_env_open(\(path))")
            var stat = MDB_stat()
            try lmdbCheck(mdb_env_stat(env, &stat), "mdb_env_stat")
            self.pageSize = Int(stat.ms_psize)
        } catch {
            mdb_env_close(env)
            throw error
        }
        self.handle = env
        self.path = path
        if !Self.mutexesAreRobust && !flags.contains(.noLock) { openGates(create: !flags.contains(.readOnly), mode: mode) }
    }

    deinit { close() }

    /// Closes the environment. All transactions must have ended.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        let idle = idleReadersLock.withLock { () -> [OpaquePointer] in
            defer { idleReaders = [] }
            return idleReaders
        }
        for reader in idle { mdb_txn_abort(reader) }
        mdb_env_close(handle)
        // Only now: closing the gates' map of lock.mdb closes a descriptor of it.
        writerGate = nil
        readersGate = nil
        if lockFileDescriptor >= 0 { Foundation.close(lockFileDescriptor) }
    }

    // MARK: Suspension

    /// Lets go of every lock the process holds on the environment's files (LMDB holds `fcntl`
    /// locks on `lock.mdb` for as long as it is open), after ending the idle read transactions,
    /// which frees their reader slots; until ``resume()``, transactions do not begin (they throw
    /// ``LMDBError/suspended``). The caller ends every transaction first. Idempotent.
    func suspend() throws(LMDBError) {
        let idle = idleReadersLock.withLock { () -> [OpaquePointer]? in
            guard !suspended else { return nil }
            suspended = true
            defer { idleReaders = [] }
            return idleReaders
        }
        guard let idle else { return }
        for reader in idle { mdb_txn_abort(reader) }
        if lockFileDescriptor < 0 {
            lockFileDescriptor = open(path + "/lock.mdb", O_RDWR | O_CLOEXEC)
            lockFileIsWritable = lockFileDescriptor >= 0
            if lockFileDescriptor < 0 { lockFileDescriptor = open(path + "/lock.mdb", O_RDONLY | O_CLOEXEC) }
        }
        // An environment without a lock file (opened without locks) holds none.
        guard lockFileDescriptor >= 0 else { return }
        try LMDBLockFile.letGo(lockFileDescriptor)
    }

    /// Whether the environment is suspended (``suspend()``).
    var isSuspended: Bool { idleReadersLock.withLock { suspended } }

    /// Takes back the locks ``suspend()`` let go of; transactions begin again.
    func resume() throws(LMDBError) {
        guard isSuspended else { return }
        if lockFileDescriptor >= 0 { try LMDBLockFile.takeBack(lockFileDescriptor, writable: lockFileIsWritable) }
        idleReadersLock.withLock { suspended = false }
    }

    /// Sets up the gates of the writer's and the reader table's mutexes (files `writer.lock` and
    /// `readers.lock` beside LMDB's, made with the environment's mode when the handle may write).
    /// Without the files (a read-only handle on a store no writer has opened since), LMDB's
    /// mutexes are used as they are.
    private func openGates(create: Bool, mode: mode_t) {
        guard let region = LMDBLockRegion(path: path + "/lock.mdb") else { return }
        let directory = path
        writerGate = LMDBMutexGate(file: path + "/" + Self.gateFileNames[0], create: create, mode: mode, region: region, mutex: .writer) {
            // As LMDB does when a robust writer's mutex is found with a dead holder: the next
            // writer counts from the newest commit on disk, so that it never overwrites the pages
            // the newest meta page refers to.
            if let newest = try? LMDBMetaPages.newestTransaction(directory: directory) { region.lastTransaction = newest }
        }
        readersGate = LMDBMutexGate(file: path + "/" + Self.gateFileNames[1], create: create, mode: mode, region: region, mutex: .readers) { [unowned self] in
            // The dead holder's slot, if it had taken one, is cleared (the gate is held here).
            _ = checkReaders()
        }
    }

    // MARK: Transactions' handles

    /// A read transaction's handle: an idle one renewed, else a new one (which takes a slot of
    /// the reader table, inside the readers' gate).
    func beginRead() throws(LMDBError) -> OpaquePointer {
        // A renewal that fails (the map grew, say) is answered by a new transaction's begin.
        let (idle, refused) = idleReadersLock.withLock { suspended ? (nil, true) : (idleReaders.popLast(), false) }
        if refused { throw LMDBError(code: LMDBError.suspended, operation: "mdb_txn_begin(read)") }
        if let idle {
            if mdb_txn_renew(idle) == 0 { return idle }
            mdb_txn_abort(idle)
        }
        var txn: OpaquePointer?
        let code = readersGate.map { gate in gate.withEntry { mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn) } }
            ?? mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
        try lmdbCheck(code, "mdb_txn_begin(read)")
        return txn!
    }

    /// Ends a read transaction begun by ``beginRead()``, keeping its handle for the next.
    func endRead(_ txn: OpaquePointer) {
        mdb_txn_reset(txn)
        let kept = idleReadersLock.withLock { () -> Bool in
            guard !isClosed, !suspended, idleReaders.count < Self.maximumIdleReaders else { return false }
            idleReaders.append(txn)
            return true
        }
        if !kept { mdb_txn_abort(txn) }
    }

    /// A write transaction's handle, begun inside the writer's gate, which ``endWrite()`` lets
    /// go once the transaction is committed or aborted.
    func beginWrite() throws(LMDBError) -> OpaquePointer {
        if isSuspended { throw LMDBError(code: LMDBError.suspended, operation: "mdb_txn_begin(write)") }
        writerGate?.enter()
        var txn: OpaquePointer?
        let code = mdb_txn_begin(handle, nil, 0, &txn)
        if code != 0 { writerGate?.leave() }
        try lmdbCheck(code, "mdb_txn_begin(write)")
        return txn!
    }

    func endWrite() {
        writerGate?.leave()
    }

    /// Notes the name of a database opened (`""` for the main one).
    func register(_ db: LMDBDatabase, named name: String) {
        let bytes = Array(name.utf8)
        namesLock.withLock { databaseNames[db.dbi] = bytes }
    }

    /// The name a database was opened by, in UTF-8.
    func name(of db: LMDBDatabase) -> [UInt8] {
        namesLock.withLock { databaseNames[db.dbi] } ?? []
    }

    func setMapSize(_ size: Int) throws(LMDBError) {
        try lmdbCheck(mdb_env_set_mapsize(handle, size), "mdb_env_set_mapsize(\(size))")
    }

    func setFlags(_ flags: Flags, on: Bool) throws(LMDBError) {
        try lmdbCheck(mdb_env_set_flags(handle, flags.rawValue, on ? 1 : 0), "mdb_env_set_flags")
    }

    /// The flags the environment runs with.
    var flags: Flags {
        var raw: UInt32 = 0
        mdb_env_get_flags(handle, &raw)
        return Flags(rawValue: raw)
    }

    func sync(force: Bool) throws(LMDBError) {
        try lmdbCheck(mdb_env_sync(handle, force ? 1 : 0), "mdb_env_sync")
        #if canImport(Darwin)
        // LMDB's sync is fsync there, which leaves the bytes in the drive's cache.
        if force { try flushDriveCache() }
        #endif
    }

    #if canImport(Darwin)
    /// Flushes the data file from the drive's cache (``FileSync``): on Apple platforms, what
    /// makes a commit LMDB synced with `fsync` survive a power loss.
    func flushDriveCache() throws(LMDBError) {
        var descriptor: Int32 = -1
        try lmdbCheck(mdb_env_get_fd(handle, &descriptor), "mdb_env_get_fd")
        guard FileSync.all(descriptor) else { throw LMDBError(code: errno, operation: "fcntl(F_FULLFSYNC) of \(path)/data.mdb") }
    }
    #endif

    func info() throws(LMDBError) -> Info {
        var raw = MDB_envinfo()
        try lmdbCheck(mdb_env_info(handle, &raw), "mdb_env_info")
        return Info(mapSize: raw.me_mapsize, lastPageNumber: raw.me_last_pgno, lastTransactionID: raw.me_last_txnid,
                    maxReaders: Int(raw.me_maxreaders), readersUsed: Int(raw.me_numreaders))
    }

    var maxKeySize: Int { Int(mdb_env_get_maxkeysize(handle)) }

    /// Drops the map's pages from this process's resident set (`MADV_DONTNEED`). The map is
    /// shared and read-only (writes go through `pwrite`), so the pages stay in the system's page
    /// cache and the next read maps them again; nothing is lost. The caller keeps the map from
    /// moving meanwhile.
    func releaseResidentPages() {
        #if os(Linux)
        advise(MADV_DONTNEED)
        #endif
    }

    /// Applies `advice` to the map. LMDB does not tell where its map lies, so the kernel's list
    /// of this process's mappings does (Linux; elsewhere callers do nothing).
    private func advise(_ advice: Int32) {
        #if os(Linux)
        let dataFile = URL(fileURLWithPath: path + "/data.mdb").resolvingSymlinksInPath().path
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return }
        for line in maps.split(separator: "\n") where line.hasSuffix(" " + dataFile) {
            // "start-end perms offset device inode path"; the map is the shared one ("r--s").
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1].hasSuffix("s") else { continue }
            let bounds = fields[0].split(separator: "-").compactMap { UInt(String($0), radix: 16) }
            guard bounds.count == 2, bounds[1] > bounds[0], let start = UnsafeMutableRawPointer(bitPattern: bounds[0]) else { continue }
            madvise(start, Int(bounds[1] - bounds[0]), advice)
        }
        #endif
    }

    /// Clears reader slots left by dead processes; returns how many were cleared.
    @discardableResult
    func clearStaleReaders() throws(LMDBError) -> Int {
        let (code, dead) = readersGate.map { gate in gate.withEntry { checkReaders() } } ?? checkReaders()
        try lmdbCheck(code, "mdb_reader_check")
        return dead
    }

    /// `mdb_reader_check`'s result and the number of slots it cleared.
    private func checkReaders() -> (Int32, Int) {
        var dead: Int32 = 0
        let code = mdb_reader_check(handle, &dead)
        return (code, Int(dead))
    }

    /// The reader table as LMDB prints it, one line per slot in use.
    func readerTable() throws(LMDBError) -> [ReaderSlot] {
        final class Lines { var lines: [String] = [] }
        let box = Lines()
        let code = mdb_reader_list(handle, { message, context in
            guard let message, let context else { return 0 }
            Unmanaged<Lines>.fromOpaque(context).takeUnretainedValue().lines.append(String(cString: message))
            return 0
        }, Unmanaged.passUnretained(box).toOpaque())
        // mdb_reader_list returns the last callback's result (0) or -1 when it cannot read the table.
        if code < 0 { throw LMDBError(code: EIO, operation: "mdb_reader_list") }
        // Rows are "pid thread txnid" (pid decimal, thread hex, txnid decimal or "-"); the header
        // and "(no active readers)" are not rows.
        return box.lines.compactMap { line in
            let words = line.split(whereSeparator: \.isWhitespace)
            guard words.count == 3, let pid = Int(words[0]) else { return nil }
            return ReaderSlot(pid: pid, thread: String(words[1]), transaction: Int(words[2]))
        }
    }

    /// Writes a consistent copy of the environment's data file to `descriptor`, opened for writing
    /// by the caller (who so chooses the file's mode).
    ///
    /// LMDB holds its mutexes only for a moment of the copy (the reader table's to take a slot,
    /// a plain copy the writer's to read the meta pages), so the copy does not hold the gates,
    /// which would keep other processes' writers waiting for its length: it passes them first,
    /// which frees a mutex a dead process left locked.
    func copy(toFile descriptor: Int32, compact: Bool) throws(LMDBError) {
        if !compact { writerGate?.withEntry {} }
        readersGate?.withEntry {}
        try lmdbCheck(mdb_env_copyfd2(handle, descriptor, compact ? UInt32(MDB_CP_COMPACT) : 0), "mdb_env_copyfd2")
    }
}

/// One slot of LMDB's reader table in use.
struct ReaderSlot {
    let pid: Int
    /// The thread, as LMDB prints it (hexadecimal).
    let thread: String
    /// The snapshot the reader holds, or nil between its transactions.
    let transaction: Int?
}
