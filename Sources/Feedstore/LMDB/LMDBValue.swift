import CLMDB
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

extension UnsafeRawBufferPointer {
    /// Three-way bytewise comparison with `other` (memcmp, then length), skipping this buffer's
    /// first `dropping` bytes.
    @inline(__always)
    func compare(dropping: Int = 0, with other: [UInt8]) -> Int {
        let count = self.count - dropping
        let shared = Swift.min(count, other.count)
        let c = other.withUnsafeBytes { o in
            shared == 0 ? 0 : memcmp(baseAddress! + dropping, o.baseAddress!, shared)
        }
        if c != 0 { return c < 0 ? -1 : 1 }
        return count == other.count ? 0 : (count < other.count ? -1 : 1)
    }
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
