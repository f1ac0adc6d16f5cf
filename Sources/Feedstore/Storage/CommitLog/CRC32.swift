/// CRC-32 (IEEE 802.3, the polynomial zlib uses), to tell a record of the commit log that was
/// written whole from one a power loss tore or left stale. Computed eight bytes at a step
/// ("slicing by 8"): a commit's record is checked on every commit, tens of kilobytes for a group.
enum CRC32 {
    /// Eight tables of 256 in one array: entry `k * 256 + b` is the CRC of byte `b` followed by
    /// `k` zero bytes.
    private static let flat: [UInt32] = {
        var tables = [(0..<256).map { n -> UInt32 in
            var c = UInt32(n)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            return c
        }]
        for k in 1..<8 {
            tables.append((0..<256).map { n in (tables[k - 1][n] >> 8) ^ tables[0][Int(tables[k - 1][n] & 0xFF)] })
        }
        return tables.flatMap { $0 }
    }()

    /// The checksum of `bytes`, continuing from `crc` (the checksum of the bytes before them).
    static func checksum(_ bytes: UnsafeRawBufferPointer, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        flat.withUnsafeBufferPointer { t in
            var at = 0
            let count = bytes.count
            while at + 8 <= count {
                let low = c ^ UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self))
                let high = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at + 4, as: UInt32.self))
                c = t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
                at += 8
            }
            while at < count {
                c = t[Int((c ^ UInt32(bytes[at])) & 0xFF)] ^ (c >> 8)
                at += 1
            }
        }
        return ~c
    }

    static func checksum(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0, continuing: crc) }
    }
}
