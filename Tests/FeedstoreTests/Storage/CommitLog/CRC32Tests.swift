@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Testing

/// The commit log's CRC-32 is the IEEE one (zlib's): known values, and random inputs of every
/// length against a bit-at-a-time reference, whole or continued from any split.
@Suite(.blocking) struct CRC32Tests {
    /// One bit at a time, as the polynomial defines it.
    static func reference(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            c ^= UInt32(byte)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        }
        return ~c
    }

    @Test func knownValues() {
        #expect(CRC32.checksum([]) == 0)
        #expect(CRC32.checksum(Array("a".utf8)) == 0xE8B7_BE43)
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum(Array("The quick brown fox jumps over the lazy dog".utf8)) == 0x414F_A339)
    }

    @Test(arguments: testSeeds(2, base: 32)) func randomInputsMatchTheReference(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<300 {
            let bytes = (0..<Int.random(in: 0...100, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let whole = CRC32.checksum(bytes)
            #expect(whole == Self.reference(bytes), "seed \(seed), \(bytes.count) bytes")
            let split = Int.random(in: 0...bytes.count, using: &rng)
            #expect(CRC32.checksum(Array(bytes[split...]), continuing: CRC32.checksum(Array(bytes[..<split]))) == whole, "seed \(seed), split at \(split)")
        }
    }
}
