import Foundation

/// How much a commit survives.
public enum Durability: String, Sendable, Codable, CaseIterable {
    /// Every commit survives power loss (LMDB syncs data and meta pages at commit).
    case full
    /// Integrity is kept, but the last commits may be lost on power loss (`MDB_NOMETASYNC`).
    case relaxed
    /// No sync at commit, for bulk loads (`MDB_NOSYNC`); the store is synced when closed. A crash
    /// of the operating system (not of the process) can lose or damage recent commits.
    case none

    /// Strength order, used when handles in one process ask for different durability.
    var strength: Int { [.none: 0, .relaxed: 1, .full: 2][self]! }
}

/// Options for opening a store.
public struct StoreOptions: Sendable {
    /// What a commit survives; see ``Durability``.
    public var durability: Durability = .full
    /// The map size to start with; the map grows by itself when full.
    public var initialMapSize: Int = 64 << 20
    /// The largest the map may grow to; writes beyond it fail with ``FeedstoreError/mapFull(path:limit:)``.
    /// Defaults to ``platformMaximumMapSize``.
    public var maximumMapSize: Int? = StoreOptions.platformMaximumMapSize
    /// The map a store grows to at most unless told otherwise. LMDB maps the whole map into the
    /// process's address space, and iOS, tvOS, visionOS and watchOS give a process far less of
    /// it than Linux and macOS: there the default is 1 GiB (256 MiB on watchOS), so that the map
    /// always fits. An app with the extended virtual addressing entitlement may set more. Nil (no
    /// limit but the disk) on Linux and macOS.
    public static let platformMaximumMapSize: Int? = {
        #if os(watchOS)
        256 << 20
        #elseif os(iOS) || os(tvOS) || os(visionOS)
        1 << 30
        #else
        nil
        #endif
    }()
    /// Permissions of files the store creates.
    public var fileMode: mode_t = 0o600
    /// Permissions of the lock file (`lock.mdb`) when the store is created; nil means
    /// ``fileMode``. Every reader records its snapshot there, so users who may read the store but
    /// not write it need write access to this file alone (for example `fileMode: 0o640,
    /// lockFileMode: 0o660`). Whoever can write it can also hold up writers.
    public var lockFileMode: mode_t? = nil
    /// Opens without write access; writes throw ``FeedstoreError/readOnly(path:reason:)``.
    ///
    /// A store opened without this option by a user who may not write its data file (or on a
    /// read-only file system) is opened read-only as well: reads work, and writes throw
    /// ``FeedstoreError/readOnly(path:reason:)`` saying why.
    public var readOnly: Bool = false
    /// Opens a store that no process writes while it is open (a store on read-only media, shipped
    /// with an application, or owned by another user): read-only, without using the lock file
    /// (`MDB_NOLOCK`), so it needs no write access to anything. If a process does write the store
    /// meanwhile, reads may return damaged data.
    public var immutable: Bool = false
    /// Checks the data file's page structure before anything reads it, and throws
    /// ``FeedstoreError/damagedFile(path:problems:)`` for a damaged file instead of letting LMDB
    /// (which trusts its file) crash on it. It reads the whole file, O(file size): for stores from
    /// sources you do not trust, or after a crash of the operating system with durability
    /// ``Durability/none``.
    public var verifyPagesOnOpen: Bool = false
    /// How many recent commits the journal keeps and when it trims.
    public var journalRetention: JournalRetention = JournalRetention()
    /// Benchmarks only: skips maintaining index counts, to measure what counting costs. A store
    /// written this way has wrong counts (`verify` reports them); never use it otherwise.
    @_spi(Benchmarking) public var maintainsCounts: Bool = true
    /// Benchmarks only: false leaves the removal of trimmed journal keys to writes alone (each
    /// its share), as without idle time, to measure what the idle writer's passes save.
    @_spi(Benchmarking) public var removesTrimmedKeysWhenIdle: Bool = true
    /// Replication only: this handle is a replica's follower, the one writer of a replica.
    @_spi(Replication) public var writesReplica: Bool = false
    /// With ``Durability/full``: each commit is made durable by one sync of a small append to a
    /// log of commits (`commits.log`, beside the data file) instead of LMDB's two syncs of the
    /// pages it wrote. LMDB's file is synced at checkpoints: at open, at close, when the map grows,
    /// after a commit too large to log (16 MiB of changes), once the log holds 64 MiB, and once
    /// the commits since the last checkpoint have written 128 MiB of pages. After a crash, the
    /// first process to open the store puts the last checkpoint back and makes the logged commits
    /// again; every acknowledged commit survives, as with LMDB's own syncs.
    ///
    /// - Only one process writes the store while it keeps the log: any other process opens it
    ///   read-only and its writes throw ``FeedstoreError/readOnly(path:reason:)`` saying why. Once
    ///   that process closes the store, another may write it, with or without the log (without,
    ///   it syncs LMDB's file and removes the log).
    /// - A process that opens the store only to read, after the machine went down while the store
    ///   was written through its log, makes that recovery first when it may write the store;
    ///   otherwise it throws ``FeedstoreError/needsRecovery(path:reason:)``.
    /// - The log takes 4 MiB of disk at first, written ahead with zeros so that a commit's sync
    ///   writes no file size, and grows by 4 MiB at a time up to about 68 MiB for a store that
    ///   commits much between checkpoints.
    /// - A checkpoint makes its commit wait for LMDB's sync of everything since the one before.
    ///   When that sync fails, the commit stands (the log holds it), and every later write fails,
    ///   unwritten, with ``FeedstoreError/commitLogFailed(path:reason:)`` saying to open the
    ///   store again: the kernel reports a failed write of a file's pages to one sync only, so a
    ///   later checkpoint could pass with pages missing. Opened again, the store makes the logged
    ///   commits again.
    /// - A commit the log cannot take is synced by LMDB's own commit, then a checkpoint. A commit
    ///   LMDB has made that can be made durable neither way (the disk refuses the log and the
    ///   checkpoint) stops the store in the process: that commit, and every later transaction,
    ///   reads included, throws ``FeedstoreError/commitLogFailed(path:reason:)`` saying to open
    ///   the store again, which keeps every acknowledged commit and drops that one. (Another
    ///   process reading the store can see that commit until then; one that keeps the store open
    ///   throughout keeps it in the store, as its page cache holds every commit.)
    /// - Between checkpoints LMDB uses no page freed since the last one (the checkpoint's pages
    ///   must stay whole), so the data file holds up to about 128 MiB beyond the store's pages.
    /// - The first handle that opens the store in a process decides; later handles share its
    ///   choice.
    public var keepsCommitLog: Bool = false
    /// The bytes of pages commits write between two checkpoints of the commit log, at most (the
    /// tests make it small).
    @_spi(Benchmarking) public var commitLogCheckpointPages: Int = CommitLogKeeper.checkpointPages
    /// Replication only, with ``Durability/relaxed``: a commit reaches watchers first and is
    /// synced right after, before the next commit begins, which takes the sync out of the way
    /// from a commit to its batches. A power loss may then damage the newest commit, never the
    /// one before it: record ``Store/newestTransaction(at:)`` before the first such commit, and
    /// after the machine went down, run ``Store/rollBackNewestCommit(at:madeAfter:)`` before the
    /// store is opened again. Without it, commits are synced before watchers see them.
    @_spi(Replication) public var syncsAfterPublishing: Bool = false
    /// Called while an index is built on open, with (records done, records in all).
    public var indexBuildProgress: (@Sendable (_ index: String, _ done: Int, _ total: Int) -> Void)? = nil

    /// Whether this handle asks for no writes.
    var opensReadOnly: Bool { readOnly || immutable }
    /// A replica's follower written without syncs changes pages in the map itself
    /// (`MDB_WRITEMAP`): no write call for each page it changes. After the machine went down such
    /// a replica is re-seeded anyway, so what the flag risks then costs nothing more.
    var writesThroughMap: Bool { writesReplica && durability == .none && !opensReadOnly }
    /// Why a handle opened with these options may not write, or nil.
    var readOnlyReason: String? { immutable ? "it was opened immutable" : readOnly ? "it was opened read-only" : nil }

    /// Options with the given settings; unspecified ones keep their defaults.
    public init(durability: Durability = .full, initialMapSize: Int = 64 << 20, maximumMapSize: Int? = StoreOptions.platformMaximumMapSize,
                fileMode: mode_t = 0o600, readOnly: Bool = false, journalRetention: JournalRetention = JournalRetention())
    {
        self.durability = durability
        self.initialMapSize = initialMapSize
        self.maximumMapSize = maximumMapSize
        self.fileMode = fileMode
        self.readOnly = readOnly
        self.journalRetention = journalRetention
    }
}
