import Foundation

/// The sync that makes a file's written bytes survive a power loss.
///
/// On Linux that is `fsync` (`fdatasync` for the data alone). On Apple platforms `fsync` hands
/// the bytes to the drive without flushing its cache, so a power loss can still lose them, in
/// any order; `fcntl(F_FULLFSYNC)` flushes the cache, as SQLite's `fullfsync` pragma does. A file
/// system that refuses it (some network and external volumes) gets `fsync`, all it offers.
enum FileSync {
    /// Syncs the file's data and metadata; false, with `errno` set, when that failed.
    static func all(_ descriptor: Int32) -> Bool {
        #if canImport(Darwin)
        if fcntl(descriptor, F_FULLFSYNC) == 0 { return true }
        #endif
        return fsync(descriptor) == 0
    }

    /// Syncs the file's data and what reading it back needs (its size).
    static func data(_ descriptor: Int32) -> Bool {
        #if canImport(Darwin)
        return all(descriptor)
        #else
        return fdatasync(descriptor) == 0
        #endif
    }
}
