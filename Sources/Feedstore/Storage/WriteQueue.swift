import Foundation

/// The store's single writer thread and its group commit.
///
/// Cycle: collect every waiting request → one LMDB write transaction → each request in its own
/// nested transaction (a throwing request is rolled back alone) → one commit and one fsync for
/// all → complete every request. LMDB ties a write transaction to the thread that began it, so
/// all of them run here, with no `await` inside.
final class WriteQueue: @unchecked Sendable {
    final class Request: @unchecked Sendable {
        private var body: ((WriteTransaction) throws -> Void)?
        private let completion: (Result<Void, any Error>) -> Void

        init(body: @escaping (WriteTransaction) throws -> Void, completion: @escaping (Result<Void, any Error>) -> Void) {
            self.body = body
            self.completion = completion
        }

        func run(_ tx: WriteTransaction) throws { try body?(tx) }

        /// Releases the body before reporting, so a synchronous caller's non-escaping closure
        /// is no longer referenced once the caller resumes.
        func complete(_ result: Result<Void, any Error>) {
            body = nil
            completion(result)
        }
    }

    /// At most this many requests share one commit, so one commit's work stays bounded.
    static let maximumBatch = 256

    private unowned let core: StoreCore
    private let condition = NSCondition()
    private var pending: [Request] = []
    private var isShutDown = false
    private var isRunning = false
    private var writerThread: pthread_t?
    private let stopped = DispatchSemaphore(value: 0)

    init(core: StoreCore) { self.core = core }

    /// Whether the calling thread is the writer thread (a write inside a write would deadlock).
    var isWriterThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        guard let writerThread else { return false }
        return pthread_equal(writerThread, pthread_self()) != 0
    }

    func submit(_ request: Request) throws {
        condition.lock()
        defer { condition.unlock() }
        guard !isShutDown else { throw FeedstoreError.storeClosed(path: core.path) }
        pending.append(request)
        if !isRunning {
            isRunning = true
            let thread = Thread { [self] in run() }
            thread.name = "Feedstore writer"
            thread.stackSize = 8 << 20
            thread.start()
        }
        condition.signal()
    }

    /// Finishes the waiting requests, then stops the thread.
    func shutdown() {
        condition.lock()
        let wasRunning = isRunning
        isShutDown = true
        condition.signal()
        condition.unlock()
        if wasRunning { stopped.wait() }
    }

    private func run() {
        condition.lock()
        writerThread = pthread_self()
        while true {
            while pending.isEmpty && !isShutDown { condition.wait() }
            if pending.isEmpty && isShutDown { break }
            let batch = Array(pending.prefix(Self.maximumBatch))
            pending.removeFirst(batch.count)
            condition.unlock()
            process(batch)
            condition.lock()
        }
        writerThread = nil
        condition.unlock()
        stopped.signal()
    }

    // MARK: One batch

    private func process(_ batch: [Request]) {
        while true {
            do {
                try core.growMapIfNearlyFull()
                let outcomes = try core.mapLock.withShared { try commit(batch) }
                for (request, outcome) in zip(batch, outcomes) { request.complete(outcome) }
                return
            } catch let error where Self.isMapFull(error) {
                do { try core.growMap() } catch {
                    return batch.forEach { $0.complete(.failure(error)) }
                }
            } catch is MapResizedSignal {
                do { try core.adoptResizedMap() } catch {
                    return batch.forEach { $0.complete(.failure(core.translate(error))) }
                }
            } catch is SchemaChangedSignal {
                do { try core.refreshSchema() } catch {
                    return batch.forEach { $0.complete(.failure(core.translate(error))) }
                }
            } catch {
                let translated = core.translate(error)
                return batch.forEach { $0.complete(.failure(translated)) }
            }
        }
    }

    static func isMapFull(_ error: any Error) -> Bool {
        (error as? LMDBError)?.code == LMDBError.mapFull
    }

    /// Runs the batch in one LMDB transaction and commits it. Map-full and schema-changed
    /// signals escape (the whole batch is retried); any other failure of one request rolls back
    /// that request only.
    private func commit(_ batch: [Request]) throws -> [Result<Void, any Error>] {
        let parent = try core.begin(readOnly: false)
        var schema = core.schema
        guard try core.storedCatalogVersion(in: parent) == schema.catalog.version else {
            parent.abort()
            throw SchemaChangedSignal()
        }
        var lastSequence = try MetaKey.decodeUInt64(try parent.get(core.system.meta, key: MetaKey.lastSequence),
                                                    what: "last sequence") ?? 0
        var outcomes: [Result<Void, any Error>] = []
        let top: LMDBTransaction
        if batch.count == 1 {
            // One request: no nesting needed; its failure simply aborts the transaction.
            let tx = WriteTransaction(core: core, transaction: parent, schema: schema, sequence: lastSequence + 1)
            do {
                try batch[0].run(tx)
                try tx.finish()
            } catch {
                tx.detach()?.abort()
                if Self.isMapFull(error) { throw error }
                return [.failure(core.translate(error))]
            }
            schema = tx.schema
            lastSequence = tx.committedSequence ?? lastSequence
            guard let txn = tx.detach() else { throw FeedstoreError.transactionEnded }
            top = txn
            outcomes.append(.success(()))
        } else {
            for request in batch {
                let tx = WriteTransaction(core: core, transaction: try LMDBTransaction(environment: core.environment, parent: parent),
                                          schema: schema, sequence: lastSequence + 1)
                do {
                    try request.run(tx)
                    try tx.finish()
                    try tx.detach()?.commit()
                    schema = tx.schema
                    lastSequence = tx.committedSequence ?? lastSequence
                    outcomes.append(.success(()))
                } catch {
                    tx.detach()?.abort()
                    if Self.isMapFull(error) { throw error }
                    outcomes.append(.failure(core.translate(error)))
                }
            }
            top = parent
        }
        try JournalTrimmer(core: core).trim(in: top, lastSequence: lastSequence, budgetCommits: 2 * UInt64(batch.count) + 2)
        try top.commit()
        core.publish(schema)
        core.commits.published(lastSequence)
        return outcomes
    }
}

/// Internal signal: another handle changed the catalog; reload and retry.
struct SchemaChangedSignal: Error {}
