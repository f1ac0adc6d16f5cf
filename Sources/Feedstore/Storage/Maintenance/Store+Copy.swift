import Foundation

extension Store {
    /// Writes a consistent copy of the store to `destination` (LMDB's copy), compacted (free
    /// pages left out) when `compact` is true. Safe while other handles and processes write.
    ///
    /// The copy gets the store's own modes: its directory's and its data file's (0700 and 0600
    /// unless the store was made with another ``StoreOptions/fileMode``). The data file is
    /// written under a temporary name, synced, renamed into place once complete, and the rename
    /// synced: a failed copy leaves no store behind that looks whole, and a copy that returned
    /// survives a power loss.
    ///
    /// - Parameters:
    ///   - destination: a new path in an existing directory, or an empty directory (one that
    ///     holds only a copy cut short counts as empty); with `replace`, also an existing store.
    ///   - compact: leaves out free pages, so the copy is as small as its data.
    ///   - replace: replaces a store already at `destination`, which no process may have open.
    /// - Throws: ``FeedstoreError/destinationExists(path:reason:)`` when `destination` exists
    ///   and may not be replaced, or its parent directory is missing; LMDB errors otherwise. The
    ///   source is only read.
    public func copy(to destination: String, compact: Bool, replace: Bool = false) throws {
        try writeCopy(to: destination, compact: compact, replace: replace, synced: true)
    }

    /// ``copy(to:compact:replace:)`` without its syncs, for a copy that is read back and deleted
    /// at once (a snapshot on its way to a bucket): a power loss may lose or damage it. Left to
    /// the page cache, the copy's pages need not reach the disk at all, and do not hold up the
    /// store's own syncs meanwhile.
    @_spi(Replication) public func temporaryCopy(to destination: String, compact: Bool) throws {
        try writeCopy(to: destination, compact: compact, replace: false, synced: false)
    }

    private func writeCopy(to destination: String, compact: Bool, replace: Bool, synced: Bool) throws {
        let fm = FileManager.default
        let dataFile = destination + "/data.mdb"
        let created: Bool
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: destination, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw FeedstoreError.destinationExists(path: destination, reason: "it is a file")
            }
            func canonical(_ p: String) -> String { URL(fileURLWithPath: p).resolvingSymlinksInPath().standardizedFileURL.path }
            guard canonical(destination) != canonical(path) else {
                throw FeedstoreError.destinationExists(path: destination, reason: "it is the store being copied")
            }
            // A copy cut short by a crash or power loss (`data.mdb.partial`) is no store: it is
            // replaced below as if the directory were empty.
            let contents = ((try? fm.contentsOfDirectory(atPath: destination)) ?? []).filter { $0 != "data.mdb.partial" }
            if !contents.isEmpty {
                guard replace else {
                    throw FeedstoreError.destinationExists(path: destination, reason: "it exists and is not empty")
                }
                guard Set(contents).isSubset(of: ["data.mdb", "lock.mdb", CommitSignal.fileName, IndexClaim.folderName] + LMDBEnvironment.gateFileNames),
                      contents.contains("data.mdb") else {
                    throw FeedstoreError.destinationExists(path: destination, reason: "it holds files other than a store's; only a store is replaced")
                }
            }
            created = false
        } else {
            // As cp does: a missing parent is a mistyped path more often than a wish for new
            // directories.
            let parent = (destination as NSString).deletingLastPathComponent
            var parentIsDirectory: ObjCBool = false
            guard parent.isEmpty || (fm.fileExists(atPath: parent, isDirectory: &parentIsDirectory) && parentIsDirectory.boolValue) else {
                throw FeedstoreError.destinationExists(path: destination, reason: "its parent directory \(parent) does not exist")
            }
            try fm.createDirectory(atPath: destination, withIntermediateDirectories: false,
                                   attributes: [.posixPermissions: Int(try Self.mode(of: path))])
            created = true
        }
        let fileMode = try Self.mode(of: path + "/data.mdb")
        let partial = destination + "/data.mdb.partial"
        unlink(partial)
        let descriptor = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, fileMode)
        guard descriptor >= 0 else {
            throw FeedstoreError.destinationExists(path: destination, reason: "cannot create \(partial): \(String(cString: strerror(errno)))")
        }
        do {
            defer { Glibc.close(descriptor) }
            // open(2) applies the umask; the copy's mode is the store's, whatever the umask.
            fchmod(descriptor, fileMode)
            try core.environment.copy(toFile: descriptor, compact: compact)
            guard !synced || FileSync.all(descriptor) else { throw FeedstoreError.diskFull(path: destination) }
        } catch {
            unlink(partial)
            throw core.translate(error)
        }
        // A replaced store's lock file describes readers of the old data file.
        unlink(destination + "/lock.mdb")
        guard rename(partial, dataFile) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(partial)
            throw FeedstoreError.destinationExists(path: destination, reason: "cannot rename the copy into place: \(reason)")
        }
        // The rename lives in the directory: synced, the copy survives a power loss once this
        // returns (and a new directory's own name lives in its parent).
        guard synced else { return }
        try DirectorySync.sync(destination)
        if created { try DirectorySync.sync((destination as NSString).deletingLastPathComponent) }
    }

    /// The permission bits of the file or directory at `path`.
    private static func mode(of path: String) throws -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw FeedstoreError.accessDenied(path: path, reason: String(cString: strerror(errno)))
        }
        return info.st_mode & 0o7777
    }
}
