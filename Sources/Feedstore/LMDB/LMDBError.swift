#if BundledLMDB
internal import CLMDB
#else
internal import CFeedstoreLMDB
#endif
import Foundation

/// An error returned by LMDB, with the operation that returned it.
///
/// An open struct over LMDB's return codes (like swift-system's `Errno`), so new codes need no
/// new cases. `MDB_NOTFOUND` is never thrown: lookups return `nil` instead.
public struct LMDBError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The raw return code: an `MDB_*` constant or an `errno` value.
    public let code: Int32
    /// The LMDB function (and where useful, its subject) that failed.
    public let operation: String

    /// An error for LMDB return code `code` from `operation`.
    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// LMDB's message (`mdb_strerror`) with the operation and code; for a damaged page, where
    /// to look next.
    public var description: String {
        if code == Self.suspended {
            return "\(operation) failed: the store is suspended in this process; resume it before reading or writing (code \(code))"
        }
        let message = "\(operation) failed: \(String(cString: mdb_strerror(code))) (code \(code))"
        if code == Self.panic {
            return message + "; LMDB stops after a write of a commit's meta page fails (the disk refused it): close every handle "
                + "of the store in this process and open it again, which keeps every acknowledged commit"
        }
        guard Self.damagedPageCodes.contains(code) else { return message }
        return message + "; the store's file looks damaged: `storectl verify` checks every page and names what is wrong"
    }

    /// Codes LMDB returns when it meets a page that is not what the tree says.
    private static let damagedPageCodes: Set<Int32> = [MDB_CORRUPTED, MDB_PAGE_NOTFOUND]

    /// `MDB_MAP_FULL`: the environment's map size was reached.
    public static let mapFull: Int32 = MDB_MAP_FULL
    /// `MDB_MAP_RESIZED`: another process grew the map beyond this process's size.
    public static let mapResized: Int32 = MDB_MAP_RESIZED
    /// `MDB_KEYEXIST`: the key is already present.
    public static let keyExists: Int32 = MDB_KEYEXIST
    /// `MDB_INVALID`: the file is not an LMDB file.
    public static let invalid: Int32 = MDB_INVALID
    /// `MDB_VERSION_MISMATCH`: the file was written by an incompatible LMDB version.
    public static let versionMismatch: Int32 = MDB_VERSION_MISMATCH
    /// `MDB_CORRUPTED`: a page has the wrong type.
    public static let corrupted: Int32 = MDB_CORRUPTED
    /// `MDB_PAGE_NOTFOUND`: a requested page was not found (usually a corrupt or truncated file).
    public static let pageNotFound: Int32 = MDB_PAGE_NOTFOUND
    /// `MDB_PANIC`: a fatal error occurred earlier and the environment must be closed.
    public static let panic: Int32 = MDB_PANIC
    /// `MDB_READERS_FULL`: the reader table is full.
    public static let readersFull: Int32 = MDB_READERS_FULL
    /// `MDB_DBS_FULL`: too many named databases.
    public static let databasesFull: Int32 = MDB_DBS_FULL
    /// `MDB_BAD_VALSIZE`: a key or value has an unsupported size.
    public static let badValueSize: Int32 = MDB_BAD_VALSIZE
    /// `MDB_TXN_FULL`: the transaction has too many dirty pages.
    public static let transactionFull: Int32 = MDB_TXN_FULL
    /// Feedstore's own code, outside LMDB's range: the environment is suspended in this process
    /// (``Store/suspend()``), so no transaction begins.
    public static let suspended: Int32 = -30_700

    /// Whether the code says the file is not a usable LMDB file.
    var isForeignOrCorruptFile: Bool {
        [Self.invalid, Self.versionMismatch, Self.corrupted, Self.pageNotFound, Self.panic].contains(code)
    }
}

extension LMDBError: LocalizedError {
    /// The same message as ``description``.
    public var errorDescription: String? { description }
}

/// Turns an LMDB return code into a thrown ``LMDBError``; every call site passes its code here.
@inline(__always)
func lmdbCheck(_ code: Int32, _ operation: @autoclosure () -> String) throws(LMDBError) {
    if code != MDB_SUCCESS { throw LMDBError(code: code, operation: operation()) }
}
