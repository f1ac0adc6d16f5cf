import Foundation

// LMDB's key order, which is the order of every key Feedstore writes: bytewise (memcmp), and
// shorter first on a shared prefix. Comparing through memcmp is many times cheaper than
// `lexicographicallyPrecedes`, which steps through the bytes one at a time.

extension UnsafeRawBufferPointer {
    /// Three-way comparison with `other` in key order, skipping this buffer's first `dropping`
    /// bytes: negative, zero or positive.
    @inline(__always)
    func compare(dropping: Int = 0, with other: UnsafeRawBufferPointer) -> Int {
        let count = self.count - dropping
        let shared = Swift.min(count, other.count)
        let c = shared == 0 ? 0 : memcmp(baseAddress! + dropping, other.baseAddress!, shared)
        if c != 0 { return c < 0 ? -1 : 1 }
        return count == other.count ? 0 : (count < other.count ? -1 : 1)
    }

    @inline(__always)
    func compare(dropping: Int = 0, with other: [UInt8]) -> Int {
        other.withUnsafeBytes { compare(dropping: dropping, with: $0) }
    }
}

extension Array where Element == UInt8 {
    /// Whether these bytes sort before `other` in key order.
    @inline(__always)
    func sortsBefore(_ other: [UInt8]) -> Bool {
        withUnsafeBytes { $0.compare(with: other) < 0 }
    }
}
