import Foundation

/// How a commit of one process wakes the waiting watchers of every other process that has the
/// store open, with no timer: each durable commit writes its sequence into the store's
/// `commits.signal` file, and a process with waiting watchers has the operating system report
/// writes to that file (``FileWriteNotices``: inotify on Linux, kqueue on Apple platforms). An
/// idle store wakes nothing; a commit wakes each listening process once.
///
/// The file holds only the newest sequence written (eight bytes, little-endian); listeners read
/// the journal's head, not the file, so a torn or stale value never hides a commit. A handle
/// that may write makes the file; one that only reads listens for it to appear.
///
/// A listening process holds a shared `fcntl` lock on the file's first byte, and a commit writes
/// the file only when a process other than its own holds one (`F_GETLK` sees only other
/// processes' locks): a store that one process alone uses wakes nothing, its own notice thread
/// included. The lock is taken before the listener's first look at the journal, and a writer
/// tests for it after its commit, so no commit falls between the two. The process keeps no
/// other descriptor of the file (closing one would drop the lock), and lets this one go only
/// on close; a suspended store (``Store/suspend()``) stops listening and lets go of the lock.
final class CommitSignal: @unchecked Sendable {
    static let fileName = "commits.signal"

    let directory: String
    private let writable: Bool
    /// The file, open for reading (and writing when the handle may write), and whether this
    /// process holds the listener's lock on it.
    private struct File {
        /// -1 until the file exists (a read-only handle), and after close.
        var descriptor: Int32 = -1
        var holdsListenerLock = false
    }
    private let file = Protected(File())
    private let listening = Protected<FileWriteNotices.Registration?>(nil)
    private let closed = Protected(false)

    /// Opens the signal of the store at `directory`, making the file (with the data file's
    /// permissions) when `writable`.
    init(directory: String, writable: Bool) throws {
        self.directory = directory
        self.writable = writable
        guard writable else {
            file.withLock { $0.descriptor = open(directory + "/" + Self.fileName, O_RDONLY | O_CLOEXEC) }
            return
        }
        var data = stat()
        let mode = stat(directory + "/data.mdb", &data) == 0 ? mode_t(data.st_mode) & 0o666 : 0o644
        let opened = open(directory + "/" + Self.fileName, O_RDWR | O_CREAT | O_CLOEXEC, mode)
        guard opened >= 0 else {
            let reason = String(cString: strerror(errno))
            throw FeedstoreError.accessDenied(path: directory, reason: "cannot make \(Self.fileName) (\(reason)), which wakes other "
                + "processes' watchers after each commit; let this user write the store's directory, or open the store read-only")
        }
        file.withLock { $0.descriptor = opened }
    }

    deinit { close() }

    /// Tells the other processes that listen that `sequence` is committed (one write of the
    /// file); nothing when none does.
    func post(_ sequence: UInt64) {
        file.withLock { file in
            guard writable, file.descriptor >= 0, Self.anotherProcessListens(file.descriptor) else { return }
            var bytes = sequence.littleEndian
            _ = withUnsafeBytes(of: &bytes) { pwrite(file.descriptor, $0.baseAddress, $0.count, 0) }
        }
    }

    /// Whether another process holds the listener's lock; true when the system cannot tell.
    static func anotherProcessListens(_ descriptor: Int32) -> Bool {
        var lock = listenerLock(F_WRLCK)
        guard fcntl(descriptor, F_GETLK, &lock) == 0 else { return true }
        return lock.l_type != Int16(F_UNLCK)
    }

    private static func listenerLock(_ type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        return lock
    }

    /// Takes the listener's lock, opening the file first when a read-only handle found none.
    private static func lockAsListener(_ file: Protected<File>, path: String) {
        file.withLock { file in
            if file.holdsListenerLock { return }
            if file.descriptor < 0 { file.descriptor = open(path, O_RDONLY | O_CLOEXEC) }
            guard file.descriptor >= 0 else { return }
            var lock = listenerLock(F_RDLCK)
            file.holdsListenerLock = fcntl(file.descriptor, F_SETLK, &lock) == 0
        }
    }

    /// Calls `notice` after each write of the file, from now until ``close()``, on the process's
    /// notice thread (once: later calls keep the first `notice`). The report is in place when
    /// this returns, so a commit posted after it is never missed; the caller then looks at the
    /// journal once for what came before. False when the system refused the watch (then
    /// nothing is reported).
    @discardableResult
    func listen(_ notice: @escaping @Sendable () -> Void) -> Bool {
        listening.withLock { registration in
            if registration != nil { return true }
            if closed.current { return false }
            // A file made after this (a read-only handle's) is locked when it is first reported,
            // before the notice looks at the journal.
            let path = directory + "/" + Self.fileName, file = self.file
            registration = FileWriteNotices.shared.register(file: path, in: directory) {
                Self.lockAsListener(file, path: path)
                notice()
            }
            Self.lockAsListener(file, path: path)
            return registration != nil
        }
    }

    /// Ends the reports and lets go of the listener's lock, keeping the descriptor (which is no
    /// lock); a later ``listen(_:)`` takes both up again. Once this returns, the notice is not
    /// running and is not called until then.
    func stopListening() {
        guard let registration = listening.withLock({ $0.take() }) else { return }
        FileWriteNotices.shared.unregister(registration)
        file.withLock { file in
            guard file.holdsListenerLock else { return }
            var lock = Self.listenerLock(F_UNLCK)
            _ = fcntl(file.descriptor, F_SETLK, &lock)
            file.holdsListenerLock = false
        }
    }

    /// Ends the reports and lets the file go; once this returns, `notice` is not running and is
    /// not called again.
    func close() {
        closed.withLock { $0 = true }
        if let registration = listening.withLock({ $0.take() }) { FileWriteNotices.shared.unregister(registration) }
        file.withLock { file in
            if file.descriptor >= 0 { Foundation.close(file.descriptor) }
            file = File()
        }
    }
}
