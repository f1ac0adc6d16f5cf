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
    public var maximumMapSize: Int? = nil
    /// Permissions of files the store creates.
    public var fileMode: mode_t = 0o600
    /// Opens without write access; writes throw ``FeedstoreError/readOnly(path:)``.
    public var readOnly: Bool = false
    /// How many recent commits the journal keeps and when it trims.
    public var journalRetention: JournalRetention = JournalRetention()
    /// Benchmarks only: skips maintaining index counts, to measure what counting costs. A store
    /// written this way has wrong counts (`verify` reports them); never use it otherwise.
    @_spi(Benchmarking) public var maintainsCounts: Bool = true
    /// Called while an index is built on open, with (records done, records in all).
    public var indexBuildProgress: (@Sendable (_ index: String, _ done: Int, _ total: Int) -> Void)? = nil

    /// Options with the given settings; unspecified ones keep their defaults.
    public init(durability: Durability = .full, initialMapSize: Int = 64 << 20, maximumMapSize: Int? = nil,
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
