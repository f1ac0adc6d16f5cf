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
final class CommitSignal: @unchecked Sendable {
    static let fileName = "commits.signal"

    let directory: String
    /// Open for writing when the handle may write; -1 otherwise.
    private let descriptor: Int32
    private let listening = Protected<FileWriteNotices.Registration?>(nil)
    private let closed = Protected(false)

    /// Opens the signal of the store at `directory`, making the file (with the data file's
    /// permissions) when `writable`.
    init(directory: String, writable: Bool) throws {
        self.directory = directory
        guard writable else {
            descriptor = -1
            return
        }
        var data = stat()
        let mode = stat(directory + "/data.mdb", &data) == 0 ? mode_t(data.st_mode) & 0o666 : 0o644
        let opened = open(directory + "/" + Self.fileName, O_WRONLY | O_CREAT | O_CLOEXEC, mode)
        guard opened >= 0 else {
            let reason = String(cString: strerror(errno))
            throw FeedstoreError.accessDenied(path: directory, reason: "cannot make \(Self.fileName) (\(reason)), which wakes other "
                + "processes' watchers after each commit; let this user write the store's directory, or open the store read-only")
        }
        descriptor = opened
    }

    deinit {
        close()
        if descriptor >= 0 { Foundation.close(descriptor) }
    }

    /// Tells the other processes that `sequence` is committed (one write of the file).
    func post(_ sequence: UInt64) {
        guard descriptor >= 0 else { return }
        var bytes = sequence.littleEndian
        _ = withUnsafeBytes(of: &bytes) { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
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
            registration = FileWriteNotices.shared.register(file: directory + "/" + Self.fileName, in: directory, notice)
            return registration != nil
        }
    }

    /// Ends the reports; once this returns, `notice` is not running and is not called again.
    func close() {
        closed.withLock { $0 = true }
        if let registration = listening.withLock({ $0.take() }) { FileWriteNotices.shared.unregister(registration) }
    }
}
