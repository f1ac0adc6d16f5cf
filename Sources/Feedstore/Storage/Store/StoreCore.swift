import Foundation

/// What every ``Store`` handle on one store directory shares inside a process: the LMDB
/// environment (LMDB forbids opening one environment twice in a process), the map lock, the
/// resolved schema and the writer thread.
final class StoreCore: @unchecked Sendable {
    let path: String
    let environment: LMDBEnvironment
    /// Why the environment is open read-only (nil when it is writable).
    let readOnlyReason: String?
    /// The options of the handle that opened the environment.
    let options: StoreOptions
    var isReadOnly: Bool { readOnlyReason != nil }
    let mapLock = MapLock()
    /// Set by ``close()`` with the map lock held exclusively, read by ``begin(readOnly:log:)``
    /// with it held shared: no transaction begins once the environment is closing.
    private var isClosed = false
    /// What ``suspend()`` let go of, for ``resume()`` to take back; its lock orders the two.
    let suspension = Protected<Suspension?>(nil)
    /// The index claims of this process's handles (``IndexClaim``), which a suspension lets go
    /// of and takes back.
    let claims = Protected<[ObjectIdentifier: IndexClaim]>([:])
    let system: SystemDatabases
    var maximumMapSize: Int? { options.maximumMapSize }
    var retention: JournalRetention { options.journalRetention }
    /// False only in benchmarks that measure the cost of counting.
    var maintainsCounts: Bool { options.maintainsCounts }
    private(set) var durability: Durability
    private let schemaState: Protected<SchemaSnapshot>
    /// Read transactions held open between calls (indexes-only watchers).
    let pinned = Protected<[ObjectIdentifier: WeakSnapshot]>([:])
    /// `mdb_dbi_open` must not run in two transactions at once.
    private let databaseOpenLock = NSLock()
    private(set) lazy var writer = WriteQueue(core: self)
    /// Told of each commit of this process once it is durable (the change feed of the layer
    /// above, which the store's first watcher attaches).
    private let observer = Protected<(any CommitObserver)?>(nil)
    /// Rung after each durable commit of this process, for threads waiting for the next one.
    let commitBell = CommitBell()
    let listeningForOtherCommits = Protected(false)
    /// Tells other processes of this one's commits, and this one of theirs.
    let commitSignal: CommitSignal
    /// When set, every write transaction of the writer records its changes
    /// (``LMDBMutationLog``), and each committed one's record is handed here, in commit order,
    /// right after it commits: what a log of commits ahead of LMDB keeps.
    let mutationLogger = Protected<(([UInt8]) -> Void)?>(nil)
    /// The log of commits ahead of LMDB, for a store that keeps one (``StoreOptions/keepsCommitLog``).
    var commitLog: CommitLogKeeper?
    /// Journal cursor moves that ride on the writer's next commit.
    let deferredCursorMoves = DeferredCursorMoves()
    /// Whether commits are synced after watchers are told of them
    /// (``StoreOptions/syncsAfterPublishing``); false once durability is raised to full.
    private(set) var syncsAfterPublishing: Bool
    /// A commit made with ``syncsAfterPublishing`` and not synced yet: the next write
    /// transaction syncs it first, so that at most the newest commit is ever unsynced. Set and
    /// cleared by the one writer of the moment (LMDB's write lock orders them).
    private let unsyncedCommit = Protected(false)

    init(path: String, environment: LMDBEnvironment, readOnlyReason: String?, options: StoreOptions, system: SystemDatabases,
         schema: SchemaSnapshot, commitSignal: CommitSignal)
    {
        self.path = path
        self.commitSignal = commitSignal
        self.environment = environment
        self.readOnlyReason = readOnlyReason
        self.options = options
        self.durability = options.durability
        self.syncsAfterPublishing = options.syncsAfterPublishing && options.durability == .relaxed && readOnlyReason == nil
        self.system = system
        self.schemaState = Protected(schema)
    }

    var schema: SchemaSnapshot { schemaState.current }

    func publish(_ schema: SchemaSnapshot) {
        schemaState.withLock { current in
            if schema.catalog.version >= current.catalog.version { current = schema }
        }
    }

    /// Adopts what another handle asks for: durability is raised when it asks for more (the
    /// strongest request wins), and commits are synced before watchers see them again when a
    /// handle that may write does not ask for ``StoreOptions/syncsAfterPublishing``.
    func adopt(_ requested: StoreOptions) throws {
        if syncsAfterPublishing && !requested.syncsAfterPublishing && !requested.opensReadOnly {
            try syncCommitIfUnsynced()
            try environment.setFlags(.noSync, on: false)
            try environment.setFlags(.noMetaSync, on: true)
            syncsAfterPublishing = false
        }
        guard requested.durability.strength > durability.strength else { return }
        try syncCommitIfUnsynced()
        try environment.setFlags([.noSync, .noMetaSync], on: false)
        if requested.durability == .relaxed { try environment.setFlags(.noMetaSync, on: true) }
        durability = requested.durability
        syncsAfterPublishing = false
    }

    /// Syncs a commit made with ``syncsAfterPublishing``, if one is not synced yet.
    func syncCommitIfUnsynced() throws {
        try unsyncedCommit.withLock { unsynced in
            guard unsynced else { return }
            try environment.sync(force: true)
            unsynced = false
        }
    }

    // MARK: Transactions

    /// Begins a transaction, adopting a map grown by another process (`MDB_MAP_RESIZED`).
    /// The caller holds the map lock shared.
    func begin(readOnly: Bool, log: LMDBMutationLog? = nil) throws -> LMDBTransaction {
        // A handle that outlived its store (a watcher polled after the last close) gets an
        // error, never a transaction on an environment that is gone.
        if isClosed { throw FeedstoreError.storeClosed(path: path) }
        // A commit whose sync failed is synced, and a failed commit's record taken out of the
        // commit log, before another commit can follow; none follows a failed sync of LMDB's
        // file under the commit log, and no transaction a commit it could not make durable.
        if let commitLog, let stop = commitLog.stop.current { throw stop }
        if !readOnly {
            try syncCommitIfUnsynced()
            try commitLog?.makeReadyToWrite()
        }
        do {
            return try LMDBTransaction(environment: environment, readOnly: readOnly, log: log)
        } catch let error where error.code == LMDBError.mapResized {
            throw MapResizedSignal()
        } catch let error where error.code == LMDBError.suspended {
            // The environment keeps the one flag: no transaction begins while it is suspended.
            throw FeedstoreError.storeSuspended(path: path)
        }
    }

    /// A log for a write transaction to record its changes in, when they are logged.
    func newMutationLog() -> LMDBMutationLog? {
        if let commitLog { return commitLog.newMutationLog() }
        return mutationLogger.current == nil ? nil : LMDBMutationLog(environment: environment)
    }

    /// Commits a write transaction begun with `log` (``newMutationLog()``): durable through the
    /// commit log when the store keeps one, and its changes handed to the logger. With
    /// ``syncsAfterPublishing``, the commit is noted as unsynced (the caller tells watchers, then
    /// calls ``syncCommitIfUnsynced()``).
    func commit(_ txn: consuming LMDBTransaction, log: LMDBMutationLog?) throws {
        if let log, let commitLog {
            try commitLog.commit(txn, mutations: log)
        } else {
            try txn.commit()
        }
        if syncsAfterPublishing { unsyncedCommit.withLock { $0 = true } }
        if let log, !log.isEmpty, !log.overflowed, let logger = mutationLogger.current { logger(log.encoded) }
    }

    /// Runs `body` in a read transaction, retrying after adopting another process's map growth.
    func withReadTransaction<R>(_ body: (consuming LMDBTransaction) throws -> R) throws -> R {
        while true {
            do {
                return try mapLock.withShared {
                    try body(try begin(readOnly: true))
                }
            } catch is MapResizedSignal {
                try adoptResizedMap()
            }
        }
    }

    func adoptResizedMap() throws {
        try mapLock.withExclusive {
            releasePinnedSnapshots()
            try environment.setMapSize(0)
        }
    }

    /// Grows the map after `MDB_MAP_FULL`: doubles it (by at most 1 GiB), within the maximum.
    /// The caller holds no transaction.
    func growMap() throws {
        try mapLock.withExclusive {
            let current = try environment.info().mapSize
            var next = current + min(current, 1 << 30)
            if let maximum = maximumMapSize {
                guard current < maximum else { throw FeedstoreError.mapFull(path: path, limit: maximum) }
                next = min(next, maximum)
            }
            releasePinnedSnapshots()
            commitLog?.releasePin()
            try environment.setMapSize(next)
            try commitLog?.checkpoint()
        }
    }

    /// Grows the map ahead of a write when it is more than 3/4 used, so that most writes never
    /// hit `MDB_MAP_FULL` and need no retry.
    func growMapIfNearlyFull() throws {
        let info = try environment.info()
        let used = (info.lastPageNumber + 1) * environment.pageSize
        if used * 4 > info.mapSize * 3, maximumMapSize.map({ info.mapSize < $0 }) ?? true {
            try growMap()
        }
    }

    /// Translates LMDB errors into the store's typed errors.
    func translate(_ error: any Error) -> any Error {
        guard let lmdb = error as? LMDBError else { return error }
        switch lmdb.code {
        case ENOSPC: return FeedstoreError.diskFull(path: path)
        // LMDB reports a write that stored only part of its pages as EIO: that is what a full
        // disk does to a commit whose pages no longer all fit.
        case EIO where Self.freeBytes(at: path).map({ $0 < 1 << 20 }) ?? false: return FeedstoreError.diskFull(path: path)
        case EACCES, EROFS: return FeedstoreError.readOnly(path: path, reason: StoreOpener.writeRefusal(lmdb.code))
        case LMDBError.mapFull: return FeedstoreError.mapFull(path: path, limit: maximumMapSize ?? 0)
        case LMDBError.suspended: return FeedstoreError.storeSuspended(path: path)
        default: return FeedstoreError.lmdb(lmdb, path: path)
        }
    }

    /// Bytes the filesystem holding `path` still has for this process (statvfs), or nil.
    static func freeBytes(at path: String) -> Int? {
        var stats = statvfs()
        guard statvfs(path, &stats) == 0 else { return nil }
        let blocks = getuid() == 0 ? stats.f_bfree : stats.f_bavail
        return Int(blocks) * Int(stats.f_frsize)
    }

    // MARK: Schema

    /// Reads the catalog as of `txn` and resolves every database it names, opening handles not
    /// yet open. Only the transaction that opened a handle may use it until that one commits.
    func resolveSchema(in txn: borrowing LMDBTransaction) throws -> SchemaSnapshot {
        guard let bytes = try txn.get(system.meta, key: MetaKey.catalog) else {
            throw FeedstoreError.notAStore(path: path, reason: "the catalog is missing")
        }
        let catalog = try Catalog.decode(bytes)
        var entities: [String: EntitySchema] = [:]
        databaseOpenLock.lock()
        defer { databaseOpenLock.unlock() }
        for entity in catalog.entities.values {
            guard let records = try txn.openDatabase(named: entity.recordsDatabaseName, create: !txn.isReadOnly) else {
                throw FeedstoreError.corruptData(what: "store \(path)", reason: "database \(entity.recordsDatabaseName) is missing")
            }
            var indexes: [IndexSchema] = []
            for index in entity.indexes {
                guard let db = try txn.openDatabase(named: index.databaseName, create: !txn.isReadOnly),
                      let counts = try txn.openDatabase(named: index.countsDatabaseName, create: !txn.isReadOnly)
                else {
                    throw FeedstoreError.corruptData(what: "store \(path)", reason: "database \(index.databaseName) or its counts are missing")
                }
                indexes.append(IndexSchema(catalog: index, of: entity, database: db, counts: counts))
            }
            entities[entity.name] = EntitySchema(catalog: entity, records: records, indexes: indexes)
        }
        return SchemaSnapshot(catalog: catalog, entities: entities)
    }

    /// Reloads the schema in a read transaction that commits, so newly opened handles stay valid.
    @discardableResult
    func refreshSchema() throws -> SchemaSnapshot {
        let schema = try withReadTransaction { txn in
            let schema = try resolveSchema(in: txn)
            try txn.commit()
            return schema
        }
        publish(schema)
        return self.schema
    }

    /// The catalog version recorded in the store as of `txn`.
    func storedCatalogVersion(in txn: borrowing LMDBTransaction) throws -> UInt64 {
        try MetaKey.decodeUInt64(try txn.get(system.meta, key: MetaKey.catalogVersion), what: "catalog version") ?? 0
    }

    // MARK: Closing

    func close() {
        commitSignal.close()
        observer.current?.close()
        mapLock.withExclusive { releasePinnedSnapshots() }
        if !deferredCursorMoves.isEmpty, !isReadOnly {
            // A commit of nothing records them; the shutdown below waits for it.
            try? writer.submit(WriteQueue.Request(body: { _ in }, completion: { _ in }))
        }
        writer.shutdown()
        commitLog?.close()
        if durability != .full, !isReadOnly { try? environment.sync(force: true) }
        // From here no transaction begins, and none pinned since the first release stays open.
        mapLock.withExclusive {
            releasePinnedSnapshots()
            isClosed = true
        }
        environment.close()
    }
}

/// What the writer tells of each commit, and the store of its closing.
protocol CommitObserver: AnyObject, Sendable {
    /// The entities whose journal entries the observer follows, and a stamp that changes when
    /// that set does; nil while it follows none. A writer keeps its entries of those entities and
    /// hands them over, which spares the observer reading them back.
    func followedEntities() -> FollowedEntities?
    /// This process committed through `sequence`, durably as the store's durability says.
    /// `entries` are the commits' entries of the followed entities, when the writer kept them.
    func published(_ sequence: UInt64, entries: CommittedEntries?)
    /// The journal's head is `newest`, read after the commit signal reported a commit that may
    /// be another process's (see ``StoreCore/listenForOtherCommits()``).
    func othersCommitted(through newest: UInt64)
    /// The store is closing.
    func close()
}

/// The entities a commit observer follows (``CommitObserver/followedEntities()``).
struct FollowedEntities {
    var entities: Set<UInt32>
    var stamp: UInt64
}

/// A group commit's journal entries of the followed entities, as the writer wrote them.
struct CommittedEntries {
    /// The sequence before the group's first commit.
    var after: UInt64
    /// The set of entities the entries were kept for.
    var followed: FollowedEntities
    /// The kept entries with their commits' sequences, in journal order.
    var records: [(sequence: UInt64, record: JournalRecord)] = []
    /// False once a group wrote more entries than ``limit``: none are kept then, so a bulk write
    /// holds no copy of its entries, and the observer reads what it needs.
    var isComplete = true
    static let limit = 100_000

    mutating func keep(_ record: JournalRecord, of sequence: UInt64) {
        guard isComplete, followed.entities.contains(record.entityID) else { return }
        if records.count < Self.limit {
            records.append((sequence, record))
        } else {
            records = []
            isComplete = false
        }
    }
}

extension StoreCore {
    /// The commit observer, made by `make` when there is none yet.
    func commitObserver<O: CommitObserver>(_ make: () -> O) -> O {
        observer.withLock { current in
            if let existing = current as? O { return existing }
            let made = make()
            current = made
            return made
        }
    }

    /// The entities the commit observer follows, if any (asked once per group commit).
    func followedEntities() -> FollowedEntities? { observer.current?.followedEntities() }

    /// From now until close, has the commit signal report commits, whichever process makes
    /// them: each report reads the journal's head once, and hands it to the commit bell and to
    /// the observer. The first call also looks at the head once, for commits made before the
    /// report was in place. Whether this call began it.
    @discardableResult
    func listenForOtherCommits() -> Bool {
        let start = listeningForOtherCommits.withLock { listening in
            defer { listening = true }
            return !listening
        }
        guard start else { return false }
        commitSignal.listen { [weak self] in self?.othersCommitted() }
        othersCommitted()
        return true
    }

    /// Reads the journal's head once and hands it to the commit bell and the observer.
    func othersCommitted() {
        guard let newest = try? withReadTransaction({ txn in try system.newestSequence(in: txn) }) else { return }
        commitBell.note(newest)
        observer.current?.othersCommitted(through: newest)
    }

    /// Tells the observer, if any, that this process committed through `sequence`.
    func published(_ sequence: UInt64, entries: CommittedEntries?) {
        commitBell.ring(sequence)
        observer.current?.published(sequence, entries: entries)
        commitSignal.post(sequence)
    }
}

/// Internal signal: another process grew the map; adopt its size and retry.
struct MapResizedSignal: Error {}
