import Foundation

/// What `storectl inspect` reports: the environment, every entity and index with the pages of
/// each tree, and the journal, gathered without scanning any data (LMDB's own statistics, its
/// free list and the counted indexes). Encoded as JSON by `storectl inspect --json`; the
/// command-line tool's article documents the schema.
public struct StoreInspection: Sendable, Codable {
    /// The pages of one B-tree (one LMDB database).
    public struct Tree: Sendable, Codable {
        /// Entries in the tree.
        public var entries: Int
        public var depth: Int
        /// Branch, leaf and overflow pages.
        public var pages: Int
        /// `pages` times the page size.
        public var bytes: Int

        init(_ stats: DatabaseStatistics) {
            entries = stats.entries
            depth = stats.depth
            pages = stats.pages
            bytes = stats.pages * stats.pageSize
        }
    }

    /// One slot of the reader table in use: a process reading the store.
    public struct Reader: Sendable, Codable {
        public var pid: Int
        /// The thread, as LMDB prints it (hexadecimal).
        public var thread: String
        /// The snapshot (transaction id) the reader holds; nil between its transactions.
        public var transaction: Int?
    }

    /// The LMDB environment.
    public struct Environment: Sendable, Codable {
        /// The map's size in bytes, as the writer last committed it (a read-only handle maps
        /// only what it reads). A writer grows it when three quarters are in use.
        public var mapSize: Int
        public var pageSize: Int
        /// Pages written so far (the highest page number plus one), free ones included.
        public var pagesUsed: Int
        /// `pagesUsed` as a percentage of the map's pages.
        public var mapUsedPercent: Double
        /// Pages of `pagesUsed` in LMDB's free list, reused by later writes.
        public var freePages: Int
        /// The data file's size in bytes.
        public var fileSize: Int
        public var lastTransactionID: Int
        /// Slots in the reader table.
        public var maxReaders: Int
        /// Slots taken since the environment was opened (LMDB's high-water mark), free ones
        /// included.
        public var readersUsed: Int
        /// The slots in use now.
        public var readers: [Reader]
    }

    /// One field of an entity's catalog.
    public struct Field: Sendable, Codable {
        public var name: String
        /// The kind its values are stored as (`int`, `string`, `date`…).
        public var kind: String
    }

    /// One secondary index.
    public struct Index: Sendable, Codable {
        public var name: String
        /// Components as `field` or `field desc`.
        public var components: [String]
        public var unique: Bool
        public var partial: Bool
        /// Entries in the index: records it holds.
        public var entries: Int
        /// The index's own tree.
        public var tree: Tree
        /// The tree of its counts (its order statistics).
        public var counts: Tree
        /// Levels of the counted tree.
        public var countLevels: Int
    }

    /// One entity.
    public struct Entity: Sendable, Codable {
        public var name: String
        public var primaryKeyKind: String
        public var records: Int
        /// The records' tree.
        public var tree: Tree
        /// Fields in the order first written.
        public var fields: [Field]
        public var indexes: [Index]
    }

    /// A durable journal cursor.
    public struct Cursor: Sendable, Codable {
        public var name: String
        public var sequence: UInt64
        /// Commits the cursor has not acknowledged.
        public var lag: UInt64
    }

    /// The journal.
    public struct Journal: Sendable, Codable {
        public var firstSequence: UInt64
        public var lastSequence: UInt64
        /// Entries in the journal, commit headers left out. Just after a trim this still counts
        /// entries of trimmed commits that later commits have not removed yet (see
        /// ``JournalRetention``).
        public var entriesRetained: Int
        public var commitsRetained: Int
        /// The journal's tree.
        public var tree: Tree
        public var cursors: [Cursor]
    }

    /// A replica's origin and how far it has applied the origin's commits.
    public struct Replica: Sendable, Codable {
        /// The identifier of the store replicated.
        public var origin: String
        /// The stream sequence of the last commit applied.
        public var streamSequence: UInt64
        /// The origin's sequence of the last commit applied.
        public var originSequence: UInt64
        /// When the origin made it (nil when not known).
        public var originTime: Date?
    }

    /// A store's commit log (``StoreOptions/keepsCommitLog``).
    public struct CommitLog: Sendable, Codable {
        /// The LMDB transaction of the last checkpoint: LMDB's file is synced through it.
        public var checkpointTransaction: UInt64
        /// Commits logged since the checkpoint, and their bytes.
        public var commitsSinceCheckpoint: Int
        public var bytesSinceCheckpoint: Int
        /// The log file's size in bytes, written ahead.
        public var fileSize: Int
        /// Whether a process keeps the log now: the store's one writer.
        public var kept: Bool
    }

    public var path: String
    public var formatVersion: UInt32
    /// The store's identifier (nil for a format 2 store opened read-only).
    public var identifier: String?
    /// The first commit whose journal entries carry records (nil when none do).
    public var recordImagesStart: UInt64?
    /// Set when the store is a replica.
    public var replica: Replica?
    public var environment: Environment
    /// Set when the store has a commit log with a checkpoint.
    public var commitLog: CommitLog?
    public var entities: [Entity]
    public var journal: Journal
}

extension Store {
    /// Statistics of the environment, every entity and index, the journal and the commit log.
    /// - Complexity: O(entities + indexes + free-list records), and a read of the commit log's
    ///   records since its checkpoint (at most 64 MiB); no data is scanned.
    public func inspect() throws -> StoreInspection {
        var info = try core.environment.info()
        info.mapSize = max(info.mapSize, LMDBPageCheck.committedMapSize(of: core.environment) ?? 0)
        let readers = try core.environment.readerTable().map {
            StoreInspection.Reader(pid: $0.pid, thread: $0.thread, transaction: $0.transaction)
        }
        let fileSize = ((try? FileManager.default.attributesOfItem(atPath: path + "/data.mdb"))?[.size] as? NSNumber)?.intValue ?? 0
        let commitLog = try CommitLogKeeper.inspection(path: path)
        return try read { tx in
            let entities = try tx.schema.catalog.sortedEntities.map { catalogEntity -> StoreInspection.Entity in
                let entity = try tx.entity(catalogEntity.name)
                let records = try tx.access { try $0.statistics(entity.records) }
                let indexes = try entity.indexes.map { index -> StoreInspection.Index in
                    let stats = try tx.access { try $0.statistics(index.database) }
                    let counts = try tx.access { try $0.statistics(index.counts) }
                    return StoreInspection.Index(
                        name: index.definition.name,
                        components: index.definition.components.map { $0.descending ? "\($0.field) desc" : $0.field },
                        unique: index.definition.unique, partial: index.definition.condition != nil, entries: stats.entries,
                        tree: .init(stats), counts: .init(counts),
                        countLevels: try tx.accessCounts(of: index) { try $0.height(in: $1) })
                }
                return StoreInspection.Entity(name: entity.name, primaryKeyKind: entity.catalog.primaryKeyKind, records: records.entries,
                                              tree: .init(records), fields: entity.catalog.fields.map { .init(name: $0.name, kind: $0.kind) },
                                              indexes: indexes)
            }
            let bounds = try tx.journalBounds()
            let journalStats = try tx.access { try $0.statistics(tx.core.system.journal) }
            let commitsRetained = bounds.last >= bounds.first ? Int(bounds.last - bounds.first + 1) : 0
            let cursors = try tx.journalCursors().map {
                StoreInspection.Cursor(name: $0.name, sequence: $0.position, lag: bounds.last > $0.position ? bounds.last - $0.position : 0)
            }
            let pageSize = core.environment.pageSize
            let pagesUsed = info.lastPageNumber + 1
            return StoreInspection(
                path: path, formatVersion: tx.schema.catalog.formatVersion,
                identifier: try tx.storeIdentifier()?.uuidString.lowercased(), recordImagesStart: try tx.recordImagesStart(),
                replica: try tx.replicaState().map {
                    .init(origin: $0.origin.uuidString.lowercased(), streamSequence: $0.streamSequence, originSequence: $0.originSequence,
                          originTime: $0.originTime)
                },
                environment: .init(mapSize: info.mapSize, pageSize: pageSize, pagesUsed: pagesUsed,
                                   mapUsedPercent: info.mapSize > 0 ? Double(pagesUsed * pageSize) * 100 / Double(info.mapSize) : 0,
                                   freePages: try tx.access { try $0.freePages() }, fileSize: fileSize,
                                   lastTransactionID: info.lastTransactionID, maxReaders: info.maxReaders, readersUsed: info.readersUsed,
                                   readers: readers),
                commitLog: commitLog,
                entities: entities,
                journal: .init(firstSequence: bounds.first, lastSequence: bounds.last, entriesRetained: journalStats.entries - commitsRetained,
                               commitsRetained: commitsRetained, tree: .init(journalStats), cursors: cursors))
        }
    }
}
