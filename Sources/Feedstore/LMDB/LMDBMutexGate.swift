import Foundation

/// A lock of Feedstore's own in front of one of LMDB's mutexes (``LMDBLockRegion``), for the
/// bundled LMDB, whose mutexes are not robust: a process killed while it holds one leaves it
/// locked, and every other process would wait for it for ever.
///
/// Every Feedstore process takes the gate (`flock` on a file of the store's, which the kernel
/// lets go when its holder dies; a semaphore among this process's threads) before LMDB's mutex,
/// and lets it go after. So whoever holds the gate finds LMDB's mutex free, unless its holder
/// died holding it: then, after a short wait for a process that is not Feedstore's, the gate
/// makes the mutex new and tells `recover`, and LMDB goes on as after a robust mutex's
/// recovery.
final class LMDBMutexGate: @unchecked Sendable {
    /// How long a mutex found locked under the gate is waited for before its holder counts as
    /// dead (a process that is not Feedstore's, such as LMDB's tools, holds it briefly).
    static let deadHolderWait = 0.2

    let file: String
    private let descriptor: Int32
    private let region: LMDBLockRegion
    private let mutex: LMDBLockRegion.Mutex
    private let recover: () -> Void
    private let inProcess = DispatchSemaphore(value: 1)
    /// Whether this entry holds the file's lock (an `flock` the system refused holds nothing,
    /// and then a locked mutex is never taken for dead).
    private var holdsFile = false

    /// Opens the gate's file (making it with `mode` when `create`); nil when it cannot be opened.
    init?(file: String, create: Bool, mode: mode_t, region: LMDBLockRegion, mutex: LMDBLockRegion.Mutex,
          recover: @escaping () -> Void) {
        let opened = open(file, (create ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, mode)
        guard opened >= 0 else { return nil }
        self.file = file
        self.descriptor = opened
        self.region = region
        self.mutex = mutex
        self.recover = recover
    }

    deinit { close(descriptor) }

    /// Waits for the gate; on return LMDB's mutex is free or held by a living process.
    func enter() {
        inProcess.wait()
        var result: Int32
        repeat { result = flock(descriptor, LOCK_EX) } while result != 0 && errno == EINTR
        holdsFile = result == 0
        guard holdsFile, region.isLocked(mutex) else { return }
        let deadline = Date().addingTimeInterval(Self.deadHolderWait)
        while Date() < deadline {
            usleep(1_000)
            if !region.isLocked(mutex) { return }
        }
        region.reinitialize(mutex)
        recover()
    }

    func leave() {
        if holdsFile { flock(descriptor, LOCK_UN) }
        holdsFile = false
        inProcess.signal()
    }

    /// Runs `body` inside the gate.
    func withEntry<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        enter()
        defer { leave() }
        return try body()
    }
}
