#if os(Linux)
import Glibc

/// The Linux side of ``FileWriteNotices``: one inotify instance. A watch is inotify's watch
/// descriptor, which two watches of one file share.
final class FileWatchQueue: @unchecked Sendable {
    typealias Watch = Int32
    private let notify: Int32

    init?() {
        notify = inotify_init1(Int32(IN_CLOEXEC))
        guard notify >= 0 else { return nil }
    }

    /// Watches `path` for writes, or for entries made in it when `forCreation`; nil when the
    /// system refuses (the file does not exist, or too many watches).
    func watch(_ path: String, forCreation: Bool) -> Watch? {
        let watch = inotify_add_watch(notify, path, forCreation ? UInt32(IN_CREATE | IN_MOVED_TO) : UInt32(IN_MODIFY))
        return watch >= 0 ? watch : nil
    }

    func unwatch(_ watch: Watch) {
        _ = inotify_rm_watch(notify, watch)
    }

    /// Blocks until the system reports something; the watches it concerns, or nil when the
    /// queue failed (then nothing is reported any more).
    func wait() -> Set<Watch>? {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = read(notify, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            var fired = Set<Watch>()
            var offset = 0
            buffer.withUnsafeBytes { bytes in
                while offset + MemoryLayout<inotify_event>.size <= count {
                    let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    fired.insert(event.wd)
                    offset += MemoryLayout<inotify_event>.size + Int(event.len)
                }
            }
            return fired
        }
    }
}
#endif
