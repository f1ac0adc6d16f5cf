import Foundation

/// LMDB's lock file (`lock.mdb`). Every process with the environment open holds a read lock on
/// its first byte (LMDB's own check for being the first one in), so whoever takes the write lock
/// on that byte knows that no other process has the environment open, and none can open it
/// until the lock is let go. A process that has read also holds a write lock on the byte at its
/// process id (LMDB's sign that its reader slots are alive, which `mdb_reader_check` tests).
enum LMDBLockFile {
    /// Runs `body` while holding the write lock on the lock file's first byte. This process must
    /// not have the environment open: closing the descriptor would drop its own locks.
    /// - Throws: `EBUSY` when another process has the environment open.
    static func withNoOtherProcess<R>(directory: String, _ body: () throws(LMDBError) -> R) throws(LMDBError) -> R {
        let file = open(directory + "/lock.mdb", O_RDWR | O_CLOEXEC)
        // No lock file: no process has the environment open.
        guard file >= 0 else { return try body() }
        defer { close(file) }
        var lock = byteLock(F_WRLCK, at: 0, length: 1)
        guard fcntl(file, F_SETLK, &lock) == 0 else {
            throw LMDBError(code: EBUSY, operation: "taking \(directory)/lock.mdb (another process has the store open)")
        }
        return try body()
    }

    /// Lets go of every lock this process holds on the lock file (`fcntl` locks belong to the
    /// process, so any descriptor of the file lets go of them), through `descriptor`, which the
    /// process then keeps open for as long as the environment is: closing a descriptor of the
    /// file would let go of the locks again after ``takeBack(_:)``.
    static func letGo(_ descriptor: Int32) throws(LMDBError) {
        var lock = byteLock(F_UNLCK, at: 0, length: 0)
        try lmdbCheck(fcntl(descriptor, F_SETLK, &lock) == 0 ? 0 : errno, "letting go of the locks on lock.mdb")
    }

    /// Takes back what ``letGo(_:)`` let go of: the read lock on the first byte, waiting while
    /// another process holds it for writing (one that opens the environment first, for a
    /// moment), then, when `descriptor` is writable, the one on the byte at this process's id.
    /// A process that found the file free in the meantime opened the environment as the first
    /// one in and set its lock region up again, which is harmless: this process held no reader
    /// slot and no transaction then.
    static func takeBack(_ descriptor: Int32, writable: Bool) throws(LMDBError) {
        var shared = byteLock(F_RDLCK, at: 0, length: 1)
        var result: Int32
        repeat { result = fcntl(descriptor, F_SETLKW, &shared) } while result != 0 && errno == EINTR
        try lmdbCheck(result == 0 ? 0 : errno, "taking back the read lock on lock.mdb")
        guard writable else { return }
        var alive = byteLock(F_WRLCK, at: off_t(getpid()), length: 1)
        try lmdbCheck(fcntl(descriptor, F_SETLK, &alive) == 0 ? 0 : errno, "taking back the readers' lock on lock.mdb")
    }

    private static func byteLock(_ type: Int32, at start: off_t, length: off_t) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = start
        lock.l_len = length
        return lock
    }
}
