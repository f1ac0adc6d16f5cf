import Foundation

/// Which start of the machine this is: a commit log's checkpoint and a replica's mark record it,
/// so that a process that finds them later can tell whether the machine went down since the
/// writer last ran (its page cache, which held every unsynced write, is then gone).
@_spi(Replication) public enum MachineBoot {
    /// 16 bytes that differ from one start of the machine to the next.
    public static var identity: [UInt8] { known.identity }

    /// Whether ``identity`` is the kernel's own identifier of this start (Linux's boot id), not
    /// the time the machine started, to the minute, which two starts a minute apart share.
    static var isExact: Bool { known.exact }

    private static let known: (identity: [UInt8], exact: Bool) = {
        #if os(Linux)
        // The kernel's random identifier of this boot, as a UUID.
        if let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8),
           let id = UUID(uuidString: text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            return (withUnsafeBytes(of: id.uuid) { Array($0) }, true)
        }
        #endif
        // Elsewhere, when the machine started, to the minute.
        let minute = UInt64((Date().timeIntervalSince1970 - ProcessInfo.processInfo.systemUptime) / 60)
        return (withUnsafeBytes(of: minute.littleEndian) { Array($0) } + [UInt8](repeating: 0, count: 8), false)
    }()

    /// ``identity`` as 32 hexadecimal digits.
    public static let text: String = identity.map { String(format: "%02x", $0) }.joined()
}
