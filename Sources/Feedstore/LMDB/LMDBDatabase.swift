import CLMDB

/// A named database inside an environment (an `MDB_dbi`). Valid for the environment's lifetime
/// once the transaction that opened it has committed.
struct LMDBDatabase: Hashable, Sendable {
    let dbi: MDB_dbi
}

/// Page and entry statistics of one database (`mdb_stat`).
public struct DatabaseStatistics: Sendable, Hashable, Codable {
    public var entries: Int
    public var depth: Int
    public var branchPages: Int
    public var leafPages: Int
    public var overflowPages: Int
    public var pageSize: Int

    public var pages: Int { branchPages + leafPages + overflowPages }
}
