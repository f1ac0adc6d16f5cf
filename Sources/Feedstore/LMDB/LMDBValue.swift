#if BundledLMDB
internal import CLMDB
#else
internal import CFeedstoreLMDB
#endif
import Foundation

/// Lends `bytes` to LMDB as an `MDB_val` for the duration of `body` only.
@inline(__always)
func withMDBValue<R, E: Error>(_ bytes: [UInt8], _ body: (inout MDB_val) throws(E) -> R) throws(E) -> R {
    // withUnsafeBufferPointer cannot throw typed errors through rethrows; carry the result out.
    var result: Result<R, E>!
    bytes.withUnsafeBufferPointer { buffer in
        var value = MDB_val(mv_size: buffer.count, mv_data: UnsafeMutableRawPointer(mutating: buffer.baseAddress))
        do throws(E) { result = .success(try body(&value)) } catch { result = .failure(error) }
    }
    return try result.get()
}

extension MDB_val {
    /// The bytes LMDB lent; valid only until the transaction ends or the next write.
    @inline(__always)
    var borrowedBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: mv_data, count: mv_size)
    }

    /// A copy of the bytes, safe to keep after the transaction.
    @inline(__always)
    var copiedBytes: [UInt8] { Array(borrowedBytes) }
}
