#if canImport(Darwin)
import Darwin

/// The Apple side of ``FileWriteNotices``: one kqueue, with an `EVFILT_VNODE` event for each
/// watch, whose identifier is a descriptor opened for events only. (Compiled only on Apple's
/// systems.)
final class FileWatchQueue: @unchecked Sendable {
    typealias Watch = Int32
    private let queue: Int32

    init?() {
        queue = kqueue()
        guard queue >= 0 else { return nil }
    }

    /// Watches `path` for writes, or a directory for entries made in it when `forCreation`
    /// (both are a vnode's `NOTE_WRITE`); nil when the system refuses.
    func watch(_ path: String, forCreation: Bool) -> Watch? {
        let descriptor = open(path, O_EVTONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var change = kevent(ident: UInt(descriptor), filter: Int16(EVFILT_VNODE), flags: UInt16(EV_ADD | EV_CLEAR),
                            fflags: UInt32(NOTE_WRITE | NOTE_EXTEND), data: 0, udata: nil)
        guard kevent(queue, &change, 1, nil, 0, nil) == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    /// Closing the descriptor removes its event from the queue.
    func unwatch(_ watch: Watch) {
        close(watch)
    }

    /// Blocks until the system reports something; the watches it concerns, or nil when the
    /// queue failed (then nothing is reported any more).
    func wait() -> Set<Watch>? {
        var events = [kevent](repeating: kevent(), count: 64)
        while true {
            let count = kevent(queue, nil, 0, &events, Int32(events.count), nil)
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            return Set(events.prefix(Int(count)).map { Watch(truncatingIfNeeded: $0.ident) })
        }
    }
}
#endif
