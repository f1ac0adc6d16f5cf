import Foundation

/// What `storectl inspect` reports: environment, entities, indexes and journal, gathered without
/// scanning any data (LMDB's own statistics and the counted indexes).
public struct StoreInspection: Sendable, Codable {
    /// The LMDB environment.
    public struct Environment: Sendable, Codable {
        public var mapSize: Int
        public var pageSize: Int
        public var pagesUsed: Int
        public var lastTransactionID: Int
        public var maxReaders: Int
        public var readersUsed: Int
        /// LMDB's reader table, one line per slot in use (pid, thread, transaction).
        public var readers: [String]
    }

    /// One secondary index.
    public struct Index: Sendable, Codable {
        public var name: String
        /// Components as `field` or `field desc`.
        public var components: [String]
        public var unique: Bool
        public var partial: Bool
        public var entries: Int
        public var depth: Int
        public var pages: Int
        /// Levels of the index's counted tree.
        public var countLevels: Int
    }

    /// One entity.
    public struct Entity: Sendable, Codable {
        public var name: String
        public var primaryKeyKind: String
        public var records: Int
        public var depth: Int
        public var pages: Int
        /// Field names and kinds, in the order first written.
        public var fields: [[String]]
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
        public var cursors: [Cursor]
    }

    public var path: String
    public var formatVersion: UInt32
    public var environment: Environment
    public var entities: [Entity]
    public var journal: Journal
}

extension Store {
    /// Statistics of the environment, every entity and index, and the journal.
    /// - Complexity: O(entities + indexes); no data is scanned.
    public func inspect() throws -> StoreInspection {
        let info = try core.environment.info()
        let readers = try core.environment.readerTable()
        return try read { tx in
            let entities = try tx.schema.catalog.sortedEntities.map { catalogEntity -> StoreInspection.Entity in
                let entity = try tx.entity(catalogEntity.name)
                let records = try tx.access { try $0.statistics(entity.records) }
                let indexes = try entity.indexes.map { index -> StoreInspection.Index in
                    let stats = try tx.access { try $0.statistics(index.database) }
                    return StoreInspection.Index(
                        name: index.definition.name,
                        components: index.definition.components.map { $0.descending ? "\($0.field) desc" : $0.field },
                        unique: index.definition.unique, partial: index.definition.condition != nil, entries: stats.entries,
                        depth: stats.depth, pages: stats.pages, countLevels: try tx.accessCounts(of: index) { try index.counted.height(in: $0) })
                }
                return StoreInspection.Entity(name: entity.name, primaryKeyKind: entity.catalog.primaryKeyKind, records: records.entries,
                                              depth: records.depth, pages: records.pages,
                                              fields: entity.catalog.fields.map { [$0.name, $0.kind] }, indexes: indexes)
            }
            let bounds = try tx.journalBounds()
            let journalStats = try tx.access { try $0.statistics(tx.core.system.journal) }
            let commitsRetained = bounds.last >= bounds.first ? Int(bounds.last - bounds.first + 1) : 0
            let cursors = try tx.journalCursors().map {
                StoreInspection.Cursor(name: $0.name, sequence: $0.position, lag: bounds.last > $0.position ? bounds.last - $0.position : 0)
            }
            return StoreInspection(
                path: path, formatVersion: tx.schema.catalog.formatVersion,
                environment: .init(mapSize: info.mapSize, pageSize: core.environment.pageSize, pagesUsed: info.lastPageNumber + 1,
                                   lastTransactionID: info.lastTransactionID, maxReaders: info.maxReaders, readersUsed: info.readersUsed,
                                   readers: readers),
                entities: entities,
                journal: .init(firstSequence: bounds.first, lastSequence: bounds.last, entriesRetained: journalStats.entries - commitsRetained,
                               commitsRetained: commitsRetained, cursors: cursors))
        }
    }
}
