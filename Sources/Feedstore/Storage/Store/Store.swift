import Foundation

/// An embedded, persistent store of entity records and sorted secondary indexes on LMDB, with a
/// journal of every commit.
///
/// ```swift
/// let store = try Store(path: "feed.store", entities: [Message.self, Contact.self])
/// try store.write { tx in try tx.put(message) }
/// let inbox = try store.read { tx in
///     try tx.query(Message.self, index: "byFolderDate", range: .prefix(1), limit: 50)
/// }
/// ```
///
/// A store is a directory holding LMDB's `data.mdb` and `lock.mdb`. Several handles, threads and
/// processes may use one store at once; writes are serialized (LMDB has one writer) and
/// group-committed. Handles are thread-safe.
public final class Store: Sendable {
    /// The store directory, as given.
    public let path: String
    let core: StoreCore
    /// Why this handle cannot write, or nil when it can: it was opened read-only or immutable, or
    /// this user may not write the store's data file, or its file system is read-only. (A
    /// read-only handle may share a read-write environment in one process.)
    public let readOnlyReason: String?
    /// Whether writes throw ``FeedstoreError/readOnly(path:reason:)``; see ``readOnlyReason``.
    public var isReadOnly: Bool { readOnlyReason != nil }
    private let closed = Protected(false)
    /// The indexes this handle declared, as other handles see them (``IndexClaim``).
    let claim = Protected<IndexClaim?>(nil)

    /// Opens the store at `path`, creating it when the directory does not exist (or is empty),
    /// and registers `entities`: new entities and indexes are created, indexes whose declaration
    /// changed are rebuilt, and indexes no longer declared are dropped.
    ///
    /// - Throws: ``FeedstoreError/notAStore(path:reason:)`` for a file, a non-empty directory
    ///   without a store, or a foreign or damaged LMDB file;
    ///   ``FeedstoreError/formatVersionTooNew(path:found:supported:)``;
    ///   ``FeedstoreError/formatUpgradeNeeded(path:found:current:)`` when opening an older
    ///   format read-only (opening it for writing upgrades it, in one transaction);
    ///   ``FeedstoreError/uniqueViolation(entity:index:key:existingID:)`` when a new unique index
    ///   cannot be built from existing records (the store is left unchanged);
    ///   ``FeedstoreError/indexInUse(entity:index:holder:)`` when the declaration would drop or
    ///   rebuild an index that another open handle declares (see <doc:SchemaEvolution>).
    public init(path: String, entities: [any Entity.Type] = [], options: StoreOptions = StoreOptions()) throws {
        self.path = path
        let directory = try StoreOpener.prepareDirectory(path, options: options)
        let canonical = directory.path
        let core: StoreCore
        do {
            core = try StoreRegistry.acquire(path: canonical, options: options) {
                try StoreOpener.openCore(path: canonical, options: options)
            }
        } catch {
            // An open that fails makes nothing: not the store, not its directory.
            directory.undo()
            throw error
        }
        self.core = core
        do {
            self.readOnlyReason = try options.readOnlyReason ?? core.readOnlyReason ?? Self.replicaRefusal(core, options: options)
            let declared = try entities.map { try StoreOpener.declaration(of: $0) }
            // A replica's follower applies its origin's schema whoever reads the replica.
            try StoreOpener.register(declared, in: core, options: options, readOnlyReason: readOnlyReason,
                                     checkingClaims: !options.writesReplica)
            if !declared.isEmpty && !options.immutable {
                let made = IndexClaim.take(in: canonical, entities: Dictionary(declared.map { ($0.name, $0.indexes) }) { a, _ in a })
                claim.withLock { $0 = core.registered(made) }
            }
        } catch {
            // Released here, once: the handle counts as closed, so its deinit (which a throwing
            // initializer still runs) does not release the environment of the process's other
            // handles a second time.
            closed.withLock { $0 = true }
            Self.release(claim, core)
            directory.undo()
            throw error
        }
    }

    deinit { close() }

    /// Why this handle may not write a replica: only the replica's follower writes it.
    private static func replicaRefusal(_ core: StoreCore, options: StoreOptions) throws -> String? {
        if options.writesReplica { return nil }
        guard let bytes = try core.withReadTransaction({ txn in try txn.get(core.system.meta, key: MetaKey.replica) }) else { return nil }
        let state = try ReplicaState(decoding: bytes)
        return "it is a replica of store \(state.origin.uuidString.lowercased()), written only by its follower"
    }

    /// Drops the store's pages that this process has read from its resident memory. They stay
    /// in the system's page cache, so reading them again costs a page fault, not a disk read.
    /// Memory-mapped pages count in a process's resident size (RSS) once touched; a long export
    /// (`storectl dump`) calls this every so many records so that its RSS stays flat however
    /// much it reads. Safe at any time, also inside a transaction.
    public func releaseMappedPages() throws {
        try checkOpen()
        core.mapLock.withShared { core.environment.releaseResidentPages() }
    }

    /// Closes this handle. The environment closes with the last handle in the process (after
    /// syncing, when durability is not full). Using a closed handle throws
    /// ``FeedstoreError/storeClosed(path:)``.
    public func close() {
        let wasOpen = closed.withLock { isClosed in
            defer { isClosed = true }
            return !isClosed
        }
        if wasOpen { Self.release(claim, core) }
    }

    /// Lets go of what an open handle holds: its index claim, then its share of the environment.
    /// (Static: a failed initializer calls it before the handle is whole.)
    private static func release(_ claim: Protected<IndexClaim?>, _ core: StoreCore) {
        claim.withLock { claim in
            if let claim { core.unregister(claim) }
            claim?.release()
            claim = nil
        }
        StoreRegistry.release(core)
    }

    func checkOpen() throws {
        if closed.current { throw FeedstoreError.storeClosed(path: path) }
    }

    /// The catalog: entities, fields and indexes as persisted.
    public var catalog: Catalog {
        get throws {
            try checkOpen()
            return try read { $0.catalog }
        }
    }

    /// Runs `body` in a read transaction: a consistent snapshot that never blocks writers.
    /// - Complexity: O(1) to begin and end.
    public func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        try checkOpen()
        do {
            return try core.withReadTransaction { txn in
                let tx = ReadTransaction(core: core, transaction: txn, schema: core.schema)
                defer { tx.detach()?.abort() }
                return try body(tx)
            }
        } catch {
            throw core.translate(error)
        }
    }

    /// Runs `body` in a write transaction and commits it (durably, as the store's durability
    /// says) before returning. Throwing from `body` rolls back everything it wrote.
    ///
    /// Calls from several threads are group-committed. `body` may run more than once (when the
    /// map grows, or when another write in its group throws), so it should have no side effects
    /// outside the transaction.
    /// - Throws: ``FeedstoreError/nestedWrite`` when called inside a write;
    ///   ``FeedstoreError/readOnly(path:reason:)``; whatever `body` throws.
    @discardableResult
    public func write<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        try checkOpen()
        if let readOnlyReason { throw FeedstoreError.readOnly(path: path, reason: readOnlyReason) }
        if core.writer.isWriterThread { throw FeedstoreError.nestedWrite }
        return try withoutActuallyEscaping(body) { body in
            var value: R?
            var outcome: Result<Void, any Error>?
            let done = DispatchSemaphore(value: 0)
            try core.writer.perform([WriteQueue.Request(body: { tx in value = try body(tx) }, completion: { result in
                outcome = result
                done.signal()
            })], wait: { done.wait() })
            try outcome!.get()
            return value!
        }
    }

    /// Runs each of `bodies`, in order, as a write of its own that shares one commit and one sync
    /// with the others (up to 256 a commit): each is a commit of its own in the journal, with its
    /// own sequence, and a body that throws rolls back its own writes alone. For applying many
    /// small, ordered changes at the cost of a few commits (a replica catching up, an import that
    /// keeps each record's change apart).
    ///
    /// A body may run more than once (when the map grows, or when another body throws), so it
    /// should have no side effects outside the transaction. A body that depends on an earlier
    /// one having succeeded should check the state it left.
    /// - Returns: each body's outcome, in order.
    /// - Throws: ``FeedstoreError/nestedWrite`` when called inside a write;
    ///   ``FeedstoreError/readOnly(path:reason:)``.
    public func writeEach(_ bodies: [(WriteTransaction) throws -> Void]) throws -> [Result<Void, any Error>] {
        try checkOpen()
        if let readOnlyReason { throw FeedstoreError.readOnly(path: path, reason: readOnlyReason) }
        if core.writer.isWriterThread { throw FeedstoreError.nestedWrite }
        guard !bodies.isEmpty else { return [] }
        let outcomes = Protected([Result<Void, any Error>?](repeating: nil, count: bodies.count))
        let done = DispatchSemaphore(value: 0)
        let requests = bodies.enumerated().map { i, body in
            WriteQueue.Request(body: body, completion: { result in
                outcomes.withLock { $0[i] = result }
                done.signal()
            })
        }
        // A commit's worth at a time, each on this thread when no other write is in the way
        // (``WriteQueue/perform(_:wait:)``).
        for start in stride(from: 0, to: requests.count, by: WriteQueue.maximumBatch) {
            let group = Array(requests[start..<min(start + WriteQueue.maximumBatch, requests.count)])
            try core.writer.perform(group, wait: {})
            for _ in group { done.wait() }
        }
        return outcomes.current.map { $0! }
    }

    /// Like ``read(_:)-4pmpg`` for async callers: the transaction runs on a background thread
    /// (LMDB ties a read transaction to its thread), so the calling actor (the main actor, say)
    /// is not held up.
    public func read<R: Sendable>(_ body: @escaping @Sendable (ReadTransaction) throws -> R) async throws -> R {
        try checkOpen()
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try self.read(body) })
            }
        }
    }

    /// Like ``write(_:)-5zf6z`` for async callers: concurrent calls share one commit (group commit),
    /// each rolled back alone if it throws.
    ///
    /// When no other write is running or waiting, the write runs on the task's own thread, as a
    /// blocking one does, with no hand-off to the writer thread and back (one writer committing
    /// one change at a time, the common case, saves two thread wake-ups a commit). Right after a
    /// group commit of several writers, it goes to the writer thread all the same, which waits a
    /// moment for the others to come back, so that they keep sharing commits. It never runs on
    /// the caller's actor: the main actor is not held up by a commit.
    @concurrent
    @discardableResult
    public func write<R: Sendable>(_ body: @escaping @Sendable (WriteTransaction) throws -> R) async throws -> R {
        try checkOpen()
        if let readOnlyReason { throw FeedstoreError.readOnly(path: path, reason: readOnlyReason) }
        if core.writer.isWriterThread { throw FeedstoreError.nestedWrite }
        let slot = ResultSlot<R>()
        return try await withCheckedThrowingContinuation { continuation in
            do {
                // Completes before it returns when it ran here; later, from the writer thread, when queued.
                let request = WriteQueue.Request(body: { tx in slot.value = try body(tx) }, completion: { result in
                    continuation.resume(with: result.map { slot.value! })
                })
                try core.writer.perform([request], wait: {})
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    /// Queues `body` as a write, group-committed as ``write(_:)-5zf6z`` is, and calls
    /// `completion` on the writer's thread once the commit is durable or the body threw: for
    /// callers that must not wait (a service answering requests on a client library's thread).
    @_spi(Replication) public func submitWrite<R>(_ body: @escaping (WriteTransaction) throws -> R,
                                                  completion: @escaping (Result<R, any Error>) -> Void)
    {
        do {
            try checkOpen()
            if let readOnlyReason { throw FeedstoreError.readOnly(path: path, reason: readOnlyReason) }
            let slot = ResultSlot<R>()
            try core.writer.submit(WriteQueue.Request(body: { tx in slot.value = try body(tx) }, completion: { result in
                completion(result.map { slot.value! })
            }))
        } catch {
            completion(.failure(core.translate(error)))
        }
    }

    /// Forces buffered commits to disk (useful with durability `.none` or `.relaxed`).
    public func sync() throws {
        try checkOpen()
        do { try core.environment.sync(force: true) } catch { throw core.translate(error) }
    }
}

/// Carries a write closure's result from the writer thread back to the caller.
private final class ResultSlot<R>: @unchecked Sendable {
    var value: R?
}
