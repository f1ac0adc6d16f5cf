#if BundledLMDB
internal import CLMDB
#else
internal import CFeedstoreLMDB
#endif

/// A named database inside an environment (an `MDB_dbi`). Valid for the environment's lifetime
/// once the transaction that opened it has committed.
struct LMDBDatabase: Hashable, Sendable {
    let dbi: MDB_dbi
}

/// Page and entry statistics of one database (`mdb_stat`).
public struct DatabaseStatistics: Sendable, Hashable, Codable {
    /// Entries in the database.
    public var entries: Int
    /// Depth of the B-tree.
    public var depth: Int
    /// Internal (non-leaf) pages.
    public var branchPages: Int
    /// Leaf pages.
    public var leafPages: Int
    /// Overflow pages (values too large for a leaf).
    public var overflowPages: Int
    /// The page size in bytes.
    public var pageSize: Int

    /// All pages of the database.
    public var pages: Int { branchPages + leafPages + overflowPages }
}
