import Foundation

/// LMDB's two meta pages, read and written with `pread` and `pwrite` on a closed environment.
///
/// LMDB writes each commit's meta page into the slot of the commit before the last, so the
/// file always holds the newest commit and the one before it. While a commit is written, LMDB
/// never reuses the pages the commit before the newest one still uses: it reuses only pages
/// freed before that one. So when each commit is synced before the next begins, a power loss
/// can damage at most the newest commit, and the one before it stays whole on disk.
/// ``rollBackNewestCommit(directory:after:)`` goes back to it. The layout is LMDB 0.9's on 64-bit
/// little-endian machines (as ``LMDBPageCheck``).
enum LMDBMetaPages {
    /// Where a meta page's body (after the page header) starts, how long it is, where its
    /// transaction id lies, and where the free list's record keeps the page size.
    static let bodyOffset = 16, bodySize = 136, transactionOffset = 144, pageSizeOffset = 40

    /// What a roll-back did: the transaction it dropped and the one the file now holds.
    struct RollBack: Equatable, Sendable {
        var dropped: UInt64
        var kept: UInt64
    }

    /// The transaction id of the environment's newest commit on disk (in the page cache).
    static func newestTransaction(directory: String) throws(LMDBError) -> UInt64 {
        let file = open(directory + "/data.mdb", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { throw LMDBError(code: errno, operation: "open(\(directory)/data.mdb)") }
        defer { close(file) }
        let (first, second, _) = try readMetaPages(file, directory + "/data.mdb")
        return max(transaction(first), transaction(second))
    }

    /// Makes the commit before the newest one the environment's newest, by writing its meta
    /// page's body over the newest one's, then syncs the file, when the newest commit is a
    /// later transaction than `transaction`. This process must not have the environment open;
    /// another process that has it open makes it fail with `EBUSY`.
    /// - Returns: what was rolled back, or nil when the newest commit is not later than
    ///   `transaction`, or the two meta pages already hold the same commit (a roll-back was done
    ///   and nothing committed since).
    static func rollBackNewestCommit(directory: String, after transaction: UInt64) throws(LMDBError) -> RollBack? {
        try LMDBLockFile.withNoOtherProcess(directory: directory) { () throws(LMDBError) in
            try rollBack(dataFile: directory + "/data.mdb", after: transaction)
        }
    }

    private static func rollBack(dataFile: String, after newest: UInt64) throws(LMDBError) -> RollBack? {
        let file = open(dataFile, O_RDWR | O_CLOEXEC)
        guard file >= 0 else { throw LMDBError(code: errno, operation: "open(\(dataFile))") }
        defer { close(file) }
        let (first, second, pageSize) = try readMetaPages(file, dataFile)
        let (firstID, secondID) = (transaction(first), transaction(second))
        guard firstID != secondID, max(firstID, secondID) > newest else { return nil }
        let (older, newerOffset) = firstID < secondID ? (first, pageSize) : (second, 0)
        let body = Array(older[bodyOffset..<bodyOffset + bodySize])
        guard pwrite(file, body, body.count, off_t(newerOffset + bodyOffset)) == body.count else {
            throw LMDBError(code: errno, operation: "pwrite(\(dataFile))")
        }
        guard FileSync.all(file) else { throw LMDBError(code: errno, operation: "fsync(\(dataFile))") }
        return RollBack(dropped: max(firstID, secondID), kept: min(firstID, secondID))
    }

    /// The newest commit's meta page body (what ``restore(directory:body:)`` puts back) and its
    /// transaction id, as the file holds them now (the page cache, for an open environment).
    static func newestMeta(directory: String) throws(LMDBError) -> (transaction: UInt64, body: [UInt8]) {
        let dataFile = directory + "/data.mdb"
        let file = open(dataFile, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { throw LMDBError(code: errno, operation: "open(\(dataFile))") }
        defer { close(file) }
        let (first, second, _) = try readMetaPages(file, dataFile)
        let newest = transaction(first) >= transaction(second) ? first : second
        return (transaction(newest), Array(newest[bodyOffset..<bodyOffset + bodySize]))
    }

    /// The transaction id a meta page body names.
    static func transaction(ofBody body: [UInt8]) -> UInt64 {
        body.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: transactionOffset - bodyOffset, as: UInt64.self)) }
    }

    /// Writes `body` (a meta page body ``newestMeta(directory:)`` read) into both meta pages,
    /// then syncs the file: the environment's newest commit is then the one the body describes.
    /// No process may have the environment open (`EBUSY` otherwise).
    static func restore(directory: String, body: [UInt8]) throws(LMDBError) {
        try LMDBLockFile.withNoOtherProcess(directory: directory) { () throws(LMDBError) in
            let dataFile = directory + "/data.mdb"
            let file = open(dataFile, O_RDWR | O_CLOEXEC)
            guard file >= 0 else { throw LMDBError(code: errno, operation: "open(\(dataFile))") }
            defer { close(file) }
            let (_, _, pageSize) = try readMetaPages(file, dataFile)
            guard body.count == bodySize, word32(Array(repeating: 0, count: bodyOffset) + body, at: bodyOffset) == LMDBPageCheck.metaMagic else {
                throw LMDBError(code: EINVAL, operation: "restoring a meta page of \(dataFile) from a body that is not one")
            }
            for offset in [0, pageSize] {
                guard pwrite(file, body, body.count, off_t(offset + bodyOffset)) == body.count else {
                    throw LMDBError(code: errno, operation: "pwrite(\(dataFile))")
                }
            }
            guard FileSync.all(file) else { throw LMDBError(code: errno, operation: "fsync(\(dataFile))") }
        }
    }

    /// Whether the data file in `directory` is one LMDB began to make and never committed to: of
    /// the two meta pages that making it writes at once (with no sync), one never reached the
    /// disk (all zeros) and the other is missing too or names no commit (transaction 0). LMDB
    /// refuses such a file. No commit was ever acknowledged in it: the first commit's sync would
    /// have made both pages durable.
    static func holdsNoCommit(directory: String) -> Bool {
        let file = open(directory + "/data.mdb", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return false }
        defer { close(file) }
        func header(at offset: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: bodyOffset + bodySize)
            let n = pread(file, &bytes, bytes.count, off_t(offset))
            return n < 0 ? nil : Array(bytes[..<n]) + [UInt8](repeating: 0, count: bytes.count - n)
        }
        guard let first = header(at: 0) else { return false }
        let firstIsMeta = magic(first) == LMDBPageCheck.metaMagic
        // The page size: the first page's, or this system's, which LMDB makes new files with.
        let pageSize = firstIsMeta ? Int(word32(first, at: pageSizeOffset)) : Int(sysconf(Int32(_SC_PAGESIZE)))
        guard pageSize >= 512, pageSize <= 1 << 16, let second = header(at: pageSize) else { return false }
        let secondIsMeta = magic(second) == LMDBPageCheck.metaMagic
        func blank(_ page: [UInt8]) -> Bool { page.allSatisfy { $0 == 0 } }
        func uncommitted(_ page: [UInt8]) -> Bool { blank(page) || (magic(page) == LMDBPageCheck.metaMagic && transaction(page) == 0) }
        return (!firstIsMeta && blank(first) && uncommitted(second)) || (!secondIsMeta && blank(second) && uncommitted(first))
    }

    /// The two meta pages' headers and bodies, and the page size.
    private static func readMetaPages(_ file: Int32, _ dataFile: String) throws(LMDBError) -> ([UInt8], [UInt8], Int) {
        var first = [UInt8](repeating: 0, count: bodyOffset + bodySize)
        guard pread(file, &first, first.count, 0) == first.count, magic(first) == LMDBPageCheck.metaMagic else {
            throw LMDBError(code: EINVAL, operation: "reading the first meta page of \(dataFile)")
        }
        let pageSize = Int(word32(first, at: pageSizeOffset))
        guard pageSize >= 512, pageSize <= 1 << 16, pageSize & (pageSize - 1) == 0 else {
            throw LMDBError(code: EINVAL, operation: "reading the page size of \(dataFile) (\(pageSize))")
        }
        var second = [UInt8](repeating: 0, count: bodyOffset + bodySize)
        guard pread(file, &second, second.count, off_t(pageSize)) == second.count, magic(second) == LMDBPageCheck.metaMagic else {
            throw LMDBError(code: EINVAL, operation: "reading the second meta page of \(dataFile)")
        }
        return (first, second, pageSize)
    }

    private static func magic(_ page: [UInt8]) -> UInt32 { word32(page, at: bodyOffset) }

    private static func transaction(_ page: [UInt8]) -> UInt64 {
        page.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: transactionOffset, as: UInt64.self)) }
    }

    private static func word32(_ page: [UInt8], at offset: Int) -> UInt32 {
        page.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self)) }
    }
}
