import Foundation

/// What a suspended store let go of (``StoreCore/suspend()``), for ``StoreCore/resume()``.
struct Suspension {
    /// Whether the process was listening for other processes' commits (it had watchers).
    var wasListening: Bool
    /// The store's data and lock files as the environment opened them, to tell on resume that
    /// no one replaced them meanwhile.
    var files: [FileIdentity]
}

/// A file's device and inode.
struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }
}

extension StoreCore {
    /// The files whose identity a resume checks.
    private var identifiedFiles: [String] { ["data.mdb", "lock.mdb"].map { path + "/" + $0 } }

    /// Lets go of every lock this process holds on the store's files, so that a suspended app
    /// holds none (iOS ends one that does, in an app group's container): the journal cursor
    /// moves waiting for a commit are committed and the data file synced first; then the
    /// commit signal's listener stops, the handles' index claims go, every transaction of the
    /// process is waited for and no new one begins, and LMDB's locks on `lock.mdb` are let go.
    /// Watchers stay as they are, and ``resume()`` brings them up to date. Idempotent.
    func suspend() throws {
        if writer.isWriterThread { throw FeedstoreError.nestedWrite }
        try suspension.withLock { suspension in
            guard suspension == nil else { return }
            if commitLog != nil {
                throw FeedstoreError.suspensionRefused(path: path, reason: "it keeps a commit log (StoreOptions.keepsCommitLog), which "
                    + "needs its lock for as long as the store is open; close the store instead")
            }
            if !isReadOnly {
                if !deferredCursorMoves.isEmpty {
                    // A commit of nothing records them, as on close.
                    let done = DispatchSemaphore(value: 0)
                    try writer.perform([WriteQueue.Request(body: { _ in }, completion: { _ in done.signal() })], wait: { done.wait() })
                }
                try syncCommitIfUnsynced()
                if durability != .full { try environment.sync(force: true) }
            }
            let files = identifiedFiles.compactMap(FileIdentity.init(path:))
            let wasListening = listeningForOtherCommits.withLock { listening in
                defer { listening = false }
                if listening { commitSignal.stopListening() }
                return listening
            }
            for claim in claims.current.values { claim.suspend() }
            do {
                try mapLock.withExclusive {
                    releasePinnedSnapshots()
                    try environment.suspend()
                }
            } catch {
                // Nothing is let go of, then: the store goes on as it was.
                mapLock.withExclusive { try? environment.resume() }
                for claim in claims.current.values { claim.resume() }
                if wasListening { listenForOtherCommits() }
                throw translate(error)
            }
            suspension = Suspension(wasListening: wasListening, files: files)
        }
    }

    /// Takes back what ``suspend()`` let go of, and has the watchers catch up with the commits
    /// made meanwhile (by other processes), from the journal. Idempotent.
    /// - Throws: ``FeedstoreError/suspensionRefused(path:reason:)`` when the store's files were
    ///   replaced or removed while it was suspended (the store stays suspended).
    func resume() throws {
        try suspension.withLock { suspension in
            guard let suspended = suspension else { return }
            guard identifiedFiles.compactMap(FileIdentity.init(path:)) == suspended.files else {
                throw FeedstoreError.suspensionRefused(path: path, reason: "its files were replaced or removed while it was suspended; "
                    + "close every handle of it in this process and open it again")
            }
            do {
                try mapLock.withExclusive { try environment.resume() }
            } catch {
                throw translate(error)
            }
            for claim in claims.current.values { claim.resume() }
            suspension = nil
            // The first look at the journal's head brings every watcher up to date.
            if suspended.wasListening { listenForOtherCommits() }
        }
    }

    /// Keeps `claim` with the process's claims of this store, so that a suspension lets it go.
    func registered(_ claim: IndexClaim?) -> IndexClaim? {
        if let claim { claims.withLock { $0[ObjectIdentifier(claim)] = claim } }
        return claim
    }

    func unregister(_ claim: IndexClaim) {
        claims.withLock { $0[ObjectIdentifier(claim)] = nil }
    }
}
