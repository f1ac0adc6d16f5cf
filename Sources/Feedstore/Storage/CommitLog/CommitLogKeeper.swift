import Foundation

/// The commit log of an open store (``CommitLog``): makes each commit durable by appending its
/// changes to the log and syncing the log, checkpoints LMDB's file when the log has grown, and
/// pins the checkpoint's snapshot so that LMDB never writes over its pages.
///
/// Used by the store's writer only (the writer thread, or a caller running its write inline),
/// one call at a time.
final class CommitLogKeeper: @unchecked Sendable {
    let log: CommitLog
    private let environment: LMDBEnvironment
    private let path: String
    /// A read transaction on the checkpoint's snapshot (LMDB reuses no page a reader may read).
    private var pin: LMDBTransaction?
    /// The log is started again once its records pass this many bytes.
    static let checkpointBytes = 64 << 20
    /// ... or once commits since the checkpoint have written this many bytes of pages (by
    /// default; ``StoreOptions/commitLogCheckpointPages``). Under the pin no page freed since the
    /// checkpoint is used again (a one-row commit writes about ten), so this bounds what the file
    /// holds beyond the store's pages: those free when the checkpoint was made, used first, and
    /// those the file grew by after them.
    static let checkpointPages = 128 << 20
    private let checkpointPages: Int
    /// A record of at least this many bytes (a group commit of a dozen rows or more) is synced
    /// on ``syncer``'s thread while LMDB commits; a smaller one before the commit, on the
    /// writer's. Handing the sync over and back costs two thread wakeups, about 45 µs here:
    /// more than LMDB takes to write the pages of a commit of a few rows.
    static let syncAsideBytes = 8_192
    /// A transaction that changes more than this is synced in LMDB's own way (a checkpoint).
    static let recordLimit = 16 << 20
    /// LMDB's last page at the checkpoint, and the pages then free (all of them reusable once
    /// the pin has moved to it).
    private var lastPageAtCheckpoint = 0, freePagesAtCheckpoint = 0
    /// Syncs the log while LMDB commits.
    private let syncer: CommitLogSyncer
    /// The first checkpoint's sync of LMDB's file that failed. The kernel reports a failed
    /// write of a file's pages to one sync only, so a later sync could succeed with pages
    /// missing on the disk: after one failed, no checkpoint is made (it would start the log
    /// again after pages that may be lost), and no write transaction begins until the store is
    /// opened again, which makes the log's commits again from the last checkpoint.
    private var dataFileSyncFailure: (any Error)?
    /// Set when a failed commit's record could neither be taken back out of the log nor left
    /// behind by a checkpoint (the disk refused both): a recovery after a machine restart could
    /// make that commit again, so nothing else commits until one of the two succeeds (and the
    /// next commit's record would follow the failed one's, as the same LMDB transaction).
    private var recordOfFailedCommit = false
    /// Set when a commit was made in LMDB but could not be made durable
    /// (``stopAfterUnkeptCommit(_:_:)``): every transaction, a read's too, begins by checking it.
    let stop = Protected<FeedstoreError?>(nil)

    /// Takes over the log of the store at `path`, whose environment is open, and checkpoints.
    init(log: CommitLog, environment: LMDBEnvironment, path: String, checkpointPages: Int = CommitLogKeeper.checkpointPages) throws {
        self.log = log
        self.checkpointPages = checkpointPages
        self.environment = environment
        self.path = path
        syncer = CommitLogSyncer(name: "fs log sync") { [log] in try log.sync() }
        do {
            try checkpoint()
        } catch {
            syncer.stop()
            throw error
        }
    }

    deinit { syncer.stop() }

    /// A record for a write transaction about to begin.
    func newMutationLog() -> LMDBMutationLog {
        LMDBMutationLog(environment: environment, limit: Self.recordLimit)
    }

    /// Commits `txn` and makes it durable. Its record is appended to the log and synced: before
    /// LMDB commits (which does not sync), or, when the record is large enough to gain by it
    /// (``syncAsideBytes``), on ``syncer``'s thread while LMDB writes the commit's pages. A
    /// transaction too large to log, or whose record the log does not take, is synced by LMDB's
    /// own commit, and a checkpoint follows it. So does a commit that brings the log or the
    /// pages written since the checkpoint to their limits; a logged commit is durable whatever
    /// that checkpoint meets. When the commit fails, its record is taken back.
    ///
    /// A commit made in LMDB that can be made durable neither way (its record's sync aside
    /// failed, then the checkpoint did) stops the store in this process (``stop``).
    func commit(_ txn: consuming LMDBTransaction, mutations: LMDBMutationLog) throws {
        let transaction = txn.id
        let checkpoints = try mutations.overflowed || log.recordBytes >= Self.checkpointBytes || pagesWrittenSinceCheckpoint() >= checkpointPages
        let record = mutations.overflowed ? Record.notLogged : mutations.isEmpty ? .none : try logRecord(mutations, transaction: transaction)
        if record == .notLogged {
            try commitSyncedByLMDB(txn)
            do {
                try checkpoint()
            } catch {
                // LMDB's file holds the commit, but a recovery would put back the checkpoint
                // before it, and the log does not hold it. (No record to take back: the last
                // one appended, if any, is an acknowledged commit's.)
                throw stopAfterUnkeptCommit(transaction, error)
            }
            return
        }
        do {
            try txn.commit()
        } catch {
            if record == .syncingAside { try? syncer.wait() }
            if record != .none { try? takeBackRecord() }
            throw error
        }
        if record == .syncingAside {
            do {
                try syncer.wait()
            } catch {
                // The record may not be on the disk: LMDB's file must hold the commit instead.
                do {
                    try checkpoint()
                } catch {
                    // A recovery after a machine restart must not make it again, as far as the disk lets.
                    try? log.takeBackLastRecord()
                    throw stopAfterUnkeptCommit(transaction, error)
                }
                return
            }
        }
        // Durable: a checkpoint that fails now is the next write's concern (a failed sync of
        // LMDB's file refuses it; anything else is tried again at the next commit).
        if checkpoints { try? checkpoint() }
    }

    /// What the log holds of a commit about to be made.
    private enum Record { case none, notLogged, synced, syncingAside }

    /// Appends the record of `transaction` and syncs it, or starts its sync aside. A record the
    /// log does not take, or whose sync fails, is taken back (``notLogged``: LMDB syncs the
    /// commit instead); should taking it back fail too, the transaction is not committed.
    private func logRecord(_ mutations: LMDBMutationLog, transaction: UInt64) throws -> Record {
        do {
            try log.append(mutations.nameTable, mutations.bytes, transaction: transaction)
        } catch {
            return .notLogged
        }
        if mutations.bytes.count >= Self.syncAsideBytes {
            syncer.start()
            return .syncingAside
        }
        do {
            try log.sync()
            return .synced
        } catch {
            // It could be on the disk all the same, and made again after a machine restart.
            try takeBackRecord()
            return .notLogged
        }
    }

    /// Commits `txn` with LMDB's syncs of its pages, then its meta page: a failed sync fails the
    /// commit, with nothing of it visible. A failure also refuses every later write, as after a
    /// checkpoint's failed sync (``dataFileSyncFailure``): the pages of the logged commits
    /// before it may not be on the disk.
    private func commitSyncedByLMDB(_ txn: consuming LMDBTransaction) throws {
        try environment.setFlags(.noSync, on: false)
        defer { try? environment.setFlags(.noSync, on: true) }
        do {
            try txn.commit()
        } catch {
            // A system call's failure (LMDB's own codes are negative, and leave the file alone).
            if error.code > 0 { dataFileSyncFailure = error }
            throw error
        }
    }

    /// Stops the store in this process after commit `transaction` was made in LMDB (readers here
    /// could see it) but could not be made durable: every later transaction, reads included, is
    /// refused until the store is opened again, which puts the last checkpoint back and makes
    /// the logged commits again, without this one. (A recovery is made only by a process alone
    /// with the store: another one's page cache holds every commit LMDB made, this one too.)
    private func stopAfterUnkeptCommit(_ transaction: UInt64, _ failure: any Error) -> FeedstoreError {
        let error = FeedstoreError.commitLogFailed(
            path: path, reason: "commit \(transaction) was made in LMDB's file but could not be made durable (\(failure)), so the store takes no more "
                + "transactions in this process, reads included: close every handle of the store in this process and open it again, "
                + "which keeps every acknowledged commit and drops this one (unless another process keeps the store open throughout)")
        stop.withLock { $0 = error }
        return error
    }

    /// Bytes of pages the commits since the checkpoint have written, as LMDB's file tells: LMDB
    /// takes pages from its free list before it grows the file, so once the file has grown,
    /// those commits have written all the free pages and the growth.
    private func pagesWrittenSinceCheckpoint() throws -> Int {
        let growth = try environment.info().lastPageNumber - lastPageAtCheckpoint
        return growth > 0 ? (growth + freePagesAtCheckpoint) * environment.pageSize : 0
    }

    /// Before a write transaction begins: takes a failed commit's record out of the log, if one
    /// was left there (``takeBackRecord()``), and pins a checkpoint, if the last one failed after
    /// the pin was let go (``releasePin()``); throws while the disk still refuses, and after a
    /// sync of LMDB's file failed (``dataFileSyncFailure``).
    func makeReadyToWrite() throws {
        if let dataFileSyncFailure { throw dataFileUnsynced(dataFileSyncFailure) }
        if recordOfFailedCommit { try takeBackRecord() }
        // Without the pin, a commit could write over the pages a recovery puts back.
        if pin == nil { try checkpoint() }
    }

    private func dataFileUnsynced(_ failure: any Error) -> FeedstoreError {
        .commitLogFailed(path: path, reason: "a sync of LMDB's file failed (\(failure)), so some of its pages may not be on the disk: "
            + "close every handle of the store in this process and open it again, which makes the log's commits again and keeps every acknowledged commit")
    }

    /// After a commit failed: takes its record back out of the log. Should that fail too, a
    /// checkpoint starts a new epoch, in which the record does not count. Should both fail, the
    /// record stays, and no transaction begins to write until one of them succeeds
    /// (``makeReadyToWrite()``).
    private func takeBackRecord() throws {
        do {
            try log.takeBackLastRecord()
        } catch {
            do {
                try checkpoint()
            } catch {
                recordOfFailedCommit = true
                throw FeedstoreError.commitLogFailed(
                    path: path, reason: "the record of a commit that failed could not be taken back out of the log, so no commit is made until it can: \(error)")
            }
        }
        recordOfFailedCommit = false
    }

    /// Syncs LMDB's file, pins its newest commit and starts the log again after it. Refused
    /// once the store stopped (``stop``): the checkpoint would keep the commit it could not.
    func checkpoint() throws {
        if let stopped = stop.current { throw stopped }
        if let dataFileSyncFailure { throw dataFileUnsynced(dataFileSyncFailure) }
        do {
            try environment.sync(force: true)
        } catch {
            dataFileSyncFailure = error
            throw error
        }
        let meta = try LMDBMetaPages.newestMeta(directory: path)
        // No commit can come between the sync and the pin: the caller is the writer.
        let newPin = try LMDBTransaction(environment: environment, readOnly: true)
        guard newPin.id == meta.transaction else {
            throw FeedstoreError.commitLogFailed(path: path, reason: "the checkpoint's snapshot is transaction \(newPin.id), its meta page \(meta.transaction)")
        }
        try log.startEpoch(transaction: meta.transaction, metaBody: meta.body)
        recordOfFailedCommit = false
        let freePages = try newPin.freePages()
        pin.take()?.abort()
        pin = consume newPin
        lastPageAtCheckpoint = try environment.info().lastPageNumber
        freePagesAtCheckpoint = freePages
    }

    /// Lets the pinned snapshot go (growing the map needs no open transaction); the next
    /// ``checkpoint()`` pins again. The caller is the writer, and commits nothing in between.
    func releasePin() {
        pin.take()?.abort()
        pin = nil
    }

    /// A checkpoint, then the pin and the log let go: the store closes with nothing left to
    /// replay, and another process may write it.
    func close() {
        try? checkpoint()
        releasePin()
        syncer.stop()
        log.close()
    }

    /// Before the environment at `path` opens: when the log holds commits after its checkpoint,
    /// or LMDB's file holds commits the log does not, puts the checkpoint's meta page back and
    /// returns the log's records to make again (``replay(_:in:)``). After a machine went down,
    /// commits after the checkpoint may be damaged in LMDB's file; their records are whole up to
    /// the first that is not. While the machine that made the checkpoint runs (where the kernel
    /// names its start), records after LMDB's newest commit are left out. When another process
    /// has the environment open, the machine did not go down since: its page cache holds every
    /// commit, and nothing is replayed.
    /// - Returns: the records, and whether this process is the only one with the store (only
    ///   then may a writer without the option retire the log).
    static func recovery(path: String, log: CommitLog) throws -> (records: [(transaction: UInt64, payload: [UInt8])], alone: Bool) {
        let alone: Bool
        do {
            try LMDBLockFile.withNoOtherProcess(directory: path) {}
            alone = true
        } catch {
            guard error.code == EBUSY else { throw error }
            alone = false
        }
        guard let checkpoint = log.checkpoint, FileManager.default.fileExists(atPath: path + "/data.mdb") else { return ([], alone) }
        var records = try log.records()
        let newest = try LMDBMetaPages.newestMeta(directory: path).transaction
        // While the machine that made the checkpoint runs, LMDB's newest commit is the last one
        // that committed: a record after it is of a commit that failed or was cut short, which
        // no one was told of and no reader saw. (Only where the kernel names the machine's start:
        // a start told by its time could be taken for the one before, and the records dropped.)
        if MachineBoot.isExact, checkpoint.boot == MachineBoot.identity { records.removeAll { $0.transaction > newest } }
        guard alone, newest != checkpoint.transaction || !records.isEmpty else { return ([], alone) }
        let busy: Bool
        do {
            try LMDBMetaPages.restore(directory: path, body: checkpoint.metaBody)
            busy = false
        } catch {
            guard error.code == EBUSY else { throw error }
            busy = true
        }
        return (busy ? [] : records, alone && !busy)
    }

    /// For a process about to open the store at `path` without writing it: whether it must wait
    /// for a writer's ``recovery(path:log:)``. That is so when the store holds a log whose
    /// checkpoint was made before the machine last started, and commits after the checkpoint are
    /// in LMDB's file or the log: the machine went down while a process wrote through the log, so
    /// those commits may be damaged in LMDB's file, or missing from it. (While the machine runs,
    /// its page cache holds every commit LMDB made, whatever happened to the writer.)
    static func needsRecovery(path: String) throws -> Bool {
        guard FileManager.default.fileExists(atPath: path + "/" + CommitLog.fileName),
              FileManager.default.fileExists(atPath: path + "/data.mdb") else { return false }
        let log = try CommitLog(directory: path, mode: 0, readOnly: true)
        defer { log.close() }
        guard let checkpoint = log.checkpoint, checkpoint.boot != MachineBoot.identity else { return false }
        return try LMDBMetaPages.newestMeta(directory: path).transaction != checkpoint.transaction || !log.records().isEmpty
    }

    /// What `storectl inspect` reports of the log of the store at `path`: nil without a log, or
    /// with one that has no checkpoint yet.
    static func inspection(path: String) throws -> StoreInspection.CommitLog? {
        guard FileManager.default.fileExists(atPath: path + "/" + CommitLog.fileName) else { return nil }
        let log = try CommitLog(directory: path, mode: 0, readOnly: true)
        defer { log.close() }
        guard let checkpoint = log.checkpoint else { return nil }
        let records = try log.records()
        return StoreInspection.CommitLog(checkpointTransaction: checkpoint.transaction, commitsSinceCheckpoint: records.count,
                                         bytesSinceCheckpoint: log.recordBytes, fileSize: log.fileSize, kept: log.isLockedForWriting)
    }

    /// Makes the records again, each in a transaction of its own, in order.
    static func replay(_ records: [(transaction: UInt64, payload: [UInt8])], in environment: LMDBEnvironment) throws {
        for record in records {
            let txn = try LMDBTransaction(environment: environment, readOnly: false)
            guard txn.id == record.transaction else {
                throw FeedstoreError.commitLogFailed(path: environment.path, reason: "replaying transaction \(record.transaction) as \(txn.id)")
            }
            try LMDBMutationLog.replay(record.payload, in: txn)
            try txn.commit()
        }
    }
}
