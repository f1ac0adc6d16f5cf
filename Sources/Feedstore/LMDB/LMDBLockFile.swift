import Foundation

/// LMDB's lock file (`lock.mdb`). Every process with the environment open holds a read lock on
/// its first byte (LMDB's own check for being the first one in), so whoever takes the write lock
/// on that byte knows that no other process has the environment open, and none can open it
/// until the lock is let go.
enum LMDBLockFile {
    /// Runs `body` while holding the write lock on the lock file's first byte. This process must
    /// not have the environment open: closing the descriptor would drop its own locks.
    /// - Throws: `EBUSY` when another process has the environment open.
    static func withNoOtherProcess<R>(directory: String, _ body: () throws(LMDBError) -> R) throws(LMDBError) -> R {
        let file = open(directory + "/lock.mdb", O_RDWR | O_CLOEXEC)
        // No lock file: no process has the environment open.
        guard file >= 0 else { return try body() }
        defer { close(file) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        guard fcntl(file, F_SETLK, &lock) == 0 else {
            throw LMDBError(code: EBUSY, operation: "taking \(directory)/lock.mdb (another process has the store open)")
        }
        return try body()
    }
}
