/// A store's commit log (`commits.log`) as the files a machine crash leaves: its checkpoint made
/// in an earlier start of the machine. A store opened in the same start of the machine that
/// made its checkpoint takes LMDB's file as whole (the page cache held every commit), so the
/// states a power loss leaves are checked as the next start of the machine finds them.
public enum CommitLogImage {
    static let magic = Array("FSLOG002".utf8)
    static let slotSize = 512

    /// `log` with each valid header slot's machine start replaced, its checksum made again; a
    /// slot that is torn or not written yet stays as it is.
    public static func madeBeforeRestart(_ log: [UInt8]) -> [UInt8] {
        var log = log
        for slot in [0, slotSize] where slot + slotSize <= log.count && Array(log[slot..<(slot + 8)]) == magic {
            let length = (0..<4).reduce(0) { $0 | Int(log[slot + 40 + $1]) << (8 * $1) }
            guard 44 + length + 4 <= slotSize else { continue }
            let body = slot..<(slot + 44 + length)
            guard checksum(log[body]) == word32(log, at: body.upperBound) else { continue }
            log.replaceSubrange((slot + 24)..<(slot + 40), with: [UInt8](repeating: 0xEE, count: 16))
            let crc = checksum(log[body])
            for i in 0..<4 { log[body.upperBound + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        }
        return log
    }

    private static func word32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * UInt32($1)) }
    }

    /// CRC-32 (IEEE), a bit at a time: a slot is a few hundred bytes.
    private static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        return ~crc
    }
}
