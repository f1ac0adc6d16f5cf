import Foundation

/// Which start of the machine this is: a commit log's checkpoint records it, so that a process
/// that finds the log later can tell whether the machine went down since the writer last ran
/// (its page cache, which held every commit, is then gone).
enum MachineBoot {
    /// 16 bytes that differ from one start of the machine to the next.
    static let identity: [UInt8] = {
        #if os(Linux)
        // The kernel's random identifier of this boot, as a UUID.
        if let text = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8),
           let id = UUID(uuidString: text.trimmingCharacters(in: .whitespacesAndNewlines)) {
            return withUnsafeBytes(of: id.uuid) { Array($0) }
        }
        #endif
        // Elsewhere, when the machine started, to the minute.
        let minute = UInt64((Date().timeIntervalSince1970 - ProcessInfo.processInfo.systemUptime) / 60)
        return withUnsafeBytes(of: minute.littleEndian) { Array($0) } + [UInt8](repeating: 0, count: 8)
    }()
}
