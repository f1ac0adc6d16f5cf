/// Writes the entries of one secondary index. Every insertion and removal of an index entry
/// goes through here, inside the writer's transaction, so the index's counts
/// (``CountedIndex``) change in the same transaction as its entries (deferred to the end of the
/// transaction or its next read of the counts, see ``WriteTransaction/countChange(of:key:delta:)``).
struct IndexStorage {
    let index: IndexSchema

    func insert(_ key: [UInt8], in tx: WriteTransaction) throws {
        try tx.access { txn in
            guard try txn.put(index.database, key: key, value: [], noOverwrite: true) else {
                throw FeedstoreError.corruptData(what: "index \(index.catalog.entity).\(index.definition.name)",
                                                 reason: "entry already present before insertion")
            }
        }
        if tx.core.maintainsCounts { try tx.countChange(of: index, key: key, delta: 1) }
    }

    func remove(_ key: [UInt8], in tx: WriteTransaction) throws {
        try tx.access { txn in
            guard try txn.delete(index.database, key: key) else {
                throw FeedstoreError.corruptData(what: "index \(index.catalog.entity).\(index.definition.name)",
                                                 reason: "entry missing before removal")
            }
        }
        if tx.core.maintainsCounts { try tx.countChange(of: index, key: key, delta: -1) }
    }
}
