import Foundation

extension Store {
    /// Lets go of every lock this process holds on the store's files, until ``resume()``: for an
    /// app whose store lives in an app group's container, which iOS terminates when it is
    /// suspended holding a file lock there (the `0xdead10cc` termination). Call it when the
    /// app moves to the background, and ``resume()`` when it returns (see <doc:ApplePlatforms>).
    ///
    /// The suspension is the process's, for every handle on the store (they share one
    /// environment). It commits the journal cursor moves still waiting for a commit, syncs the
    /// data file when durability is not full, waits for this process's running transactions to
    /// end, and then lets go of LMDB's locks on `lock.mdb`, the commit signal's, and the handles'
    /// index claims. Until ``resume()``, reads and writes throw
    /// ``FeedstoreError/storeSuspended(path:)``; watchers stay open and wait, and after the resume
    /// each one's next batch brings it from where it was to the store as it is then, other
    /// processes' commits of the meantime included. Other processes go on reading and writing
    /// meanwhile, and may change the schema, as after a close. Calling it again does nothing.
    ///
    /// Do not call it inside a transaction (it waits for the transactions to end).
    /// - Throws: ``FeedstoreError/nestedWrite`` inside a write;
    ///   ``FeedstoreError/suspensionRefused(path:reason:)`` for a store that keeps a commit log.
    public func suspend() throws {
        try checkOpen()
        try core.suspend()
    }

    /// Takes back the locks ``suspend()`` let go of; reads and writes go on, and every watcher's
    /// next batch catches up with the commits made while the store was suspended. Calling it on
    /// a store that is not suspended does nothing.
    /// - Throws: ``FeedstoreError/suspensionRefused(path:reason:)`` when the store's files were
    ///   replaced or removed meanwhile (close the store and open it again).
    public func resume() throws {
        try checkOpen()
        try core.resume()
    }

    /// Whether the store is suspended in this process (``suspend()``).
    public var isSuspended: Bool { core.suspension.current != nil }
}
