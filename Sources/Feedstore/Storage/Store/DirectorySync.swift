import Foundation

/// Makes a directory's entries durable. A file's data reaches the disk with its own sync, but its
/// name lives in its directory: until the directory is synced, a power loss can take a new file
/// (or a rename, or a new directory's name in its parent) with everything written to it.
@_spi(Replication) public enum DirectorySync {
    /// Syncs the directory at `path` (fsync on the directory).
    /// - Throws: ``FeedstoreError/accessDenied(path:reason:)`` when it cannot be opened;
    ///   ``FeedstoreError/diskFull(path:)`` when the sync fails.
    public static func sync(_ path: String) throws {
        let descriptor = open(path.isEmpty ? "." : path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw FeedstoreError.accessDenied(path: path, reason: String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        guard FileSync.all(descriptor) else { throw FeedstoreError.diskFull(path: path) }
    }

    /// Syncs the parent of each directory in `made` (outermost first), so that their names
    /// survive a power loss.
    static func syncParents(of made: [String]) throws {
        for directory in made { try sync((directory as NSString).deletingLastPathComponent) }
    }
}
