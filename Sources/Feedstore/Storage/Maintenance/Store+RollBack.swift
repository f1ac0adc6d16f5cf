import Foundation

extension Store {
    /// What ``rollBackNewestCommit(at:)`` did: the LMDB transaction it dropped and the one the
    /// store now ends with.
    @_spi(Replication) public struct RollBack: Equatable, Sendable {
        public var droppedTransaction: UInt64
        public var keptTransaction: UInt64
    }

    /// Drops the store's newest commit and goes back to the one before it, which a power loss
    /// cannot have damaged when the store was written with
    /// ``StoreOptions/syncsAfterPublishing``: run it before opening such a store again after
    /// the machine went down. Only a commit made after `transaction` (what
    /// ``newestTransaction(at:)`` said before the first such commit) is dropped: commits made
    /// before were synced before anything else began. The newest commit may have been whole; it
    /// is dropped anyway, since nothing on disk tells a whole commit from a damaged one.
    /// - Returns: what was dropped, or nil when nothing was: the newest commit is not later than
    ///   `transaction`, or a roll-back was done and nothing committed since (running it twice
    ///   drops one commit).
    /// - Throws: ``FeedstoreError/incompatibleHandle(path:reason:)`` while this process has the
    ///   store open, ``FeedstoreError/lmdb(_:path:)`` (`EBUSY`) while another one does, and
    ///   ``FeedstoreError/notAStore(path:reason:)`` when `path` holds no store.
    @_spi(Replication) public static func rollBackNewestCommit(at path: String, madeAfter transaction: UInt64) throws -> RollBack? {
        let canonical = try dataDirectory(path)
        guard !StoreRegistry.isOpen(path: canonical) else {
            throw FeedstoreError.incompatibleHandle(path: path, reason: "it is open in this process; its newest commit is rolled back only while it is closed")
        }
        do {
            let done = try LMDBMetaPages.rollBackNewestCommit(directory: canonical, after: transaction)
            return done.map { RollBack(droppedTransaction: $0.dropped, keptTransaction: $0.kept) }
        } catch {
            throw FeedstoreError.lmdb(error, path: path)
        }
    }

    /// The LMDB transaction of the newest commit in the store's file: recorded before a store
    /// is written with ``StoreOptions/syncsAfterPublishing``, so that
    /// ``rollBackNewestCommit(at:madeAfter:)`` drops only commits made so.
    @_spi(Replication) public static func newestTransaction(at path: String) throws -> UInt64 {
        do { return try LMDBMetaPages.newestTransaction(directory: try dataDirectory(path)) } catch let error as LMDBError {
            throw FeedstoreError.lmdb(error, path: path)
        }
    }

    /// Throws unless no process has the store at `path` open, `doing` what needs that.
    /// - Throws: ``FeedstoreError/incompatibleHandle(path:reason:)`` while this process has it
    ///   open, ``FeedstoreError/lmdb(_:path:)`` (`EBUSY`) while another one does.
    @_spi(Replication) public static func checkClosedEverywhere(at path: String, doing: String) throws {
        let canonical = try dataDirectory(path)
        guard !StoreRegistry.isOpen(path: canonical) else {
            throw FeedstoreError.incompatibleHandle(path: path, reason: "it is open in this process; \(doing) only while it is closed")
        }
        do { try LMDBLockFile.withNoOtherProcess(directory: canonical) {} } catch {
            throw FeedstoreError.lmdb(LMDBError(code: error.code, operation: "\(doing): another process has the store open"), path: path)
        }
    }

    /// The canonical path of the store directory at `path`, which must hold a data file.
    private static func dataDirectory(_ path: String) throws -> String {
        let canonical = URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
        guard FileManager.default.fileExists(atPath: canonical + "/data.mdb") else {
            throw FeedstoreError.notAStore(path: path, reason: "the directory holds no data.mdb")
        }
        return canonical
    }
}
