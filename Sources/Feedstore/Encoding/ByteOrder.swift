import Foundation

// LMDB's key order, which is the order of every key Feedstore writes: bytewise (memcmp), and
// shorter first on a shared prefix. Keys are compared eight bytes at a time as big-endian
// words, which orders them as memcmp does; for keys of a few dozen bytes this beats a call to
// memcmp, and both are many times cheaper than `lexicographicallyPrecedes`, which steps through
// the bytes one at a time.

extension UnsafeRawBufferPointer {
    /// Three-way comparison with `other` in key order, skipping this buffer's first `dropping`
    /// bytes: negative, zero or positive.
    @inline(__always)
    func compare(dropping: Int = 0, with other: UnsafeRawBufferPointer) -> Int {
        let count = self.count - dropping
        let shared = Swift.min(count, other.count)
        if shared > 0 {
            let a = baseAddress! + dropping, b = other.baseAddress!
            var i = 0
            while i + 8 <= shared {
                let x = UInt64(bigEndian: a.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                let y = UInt64(bigEndian: b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                if x != y { return x < y ? -1 : 1 }
                i += 8
            }
            while i < shared {
                let x = a.load(fromByteOffset: i, as: UInt8.self), y = b.load(fromByteOffset: i, as: UInt8.self)
                if x != y { return x < y ? -1 : 1 }
                i += 1
            }
        }
        return count == other.count ? 0 : (count < other.count ? -1 : 1)
    }

    @inline(__always)
    func compare(dropping: Int = 0, with other: [UInt8]) -> Int {
        other.withUnsafeBytes { compare(dropping: dropping, with: $0) }
    }
}

extension Array where Element == UInt8 {
    /// Appends `value` most significant byte first. Byte by byte, this is several times cheaper
    /// than appending the integer's bytes through `withUnsafeBytes(of:)`.
    @inline(__always)
    mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        var shift = T.bitWidth - 8
        while shift >= 0 {
            append(UInt8(truncatingIfNeeded: value >> shift))
            shift -= 8
        }
    }

    /// Appends `value` least significant byte first.
    @inline(__always)
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        var shift = 0
        while shift < T.bitWidth {
            append(UInt8(truncatingIfNeeded: value >> shift))
            shift += 8
        }
    }

    /// Whether these bytes sort before `other` in key order.
    @inline(__always)
    func sortsBefore(_ other: [UInt8]) -> Bool {
        withUnsafeBytes { $0.compare(with: other) < 0 }
    }
}
