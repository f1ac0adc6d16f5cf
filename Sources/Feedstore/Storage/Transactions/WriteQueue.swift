import Foundation

/// The store's single writer thread and its group commit.
///
/// Cycle: collect every waiting request (waiting up to a quarter of the last commit's time while
/// fewer are waiting than the last commit held) → one LMDB write transaction → each request in
/// turn (a throwing request rolls the transaction back, and the others run again without it) →
/// one commit and one fsync for all → complete every request. LMDB ties a write transaction to
/// the thread that began it, so each runs start to finish on one thread, with no `await` inside:
/// the writer thread, or, for a caller that finds no other write running or waiting, the
/// caller's own thread (which saves two thread switches, a third of a small commit's time),
/// unless the writer thread has just committed a group (``writersComeBack()``).
///
/// While no write waits, the writer thread removes keys of trimmed journal commits, a bounded
/// pass at a time, so that the writes after a bulk load do less of it themselves.
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
    /// A batch is being processed, by the writer thread or inline; one at a time.
    private var isBusy = false
    private var writerThread: pthread_t?
    /// The synchronous caller running its write inline, if any.
    private var inlineThread: pthread_t?
    private let stopped = DispatchSemaphore(value: 0)
    /// The record buffers that one transaction hands to the next, within a group and from group
    /// to group, so that a group of one-row writes allocates them once, not once a closure. Used
    /// by the batch being processed only (``isBusy``).
    private var spareBuffers = RecordBuffers()
    /// How many requests the writer thread's last commit held, and how long it took.
    private var lastGroup = 0
    private var lastCommitNanoseconds: UInt64 = 0
    /// A new group waits at most this share of the last commit's time for more requests.
    static let lingerShare: UInt64 = 4
    /// Whether keys of trimmed journal commits are left to remove, as the last commit found.
    private var trimmedKeysLeft = false
    /// A commit found such keys after one that found none: the writer thread, asleep without a
    /// deadline, is woken once to begin its passes. (Waking it after every inline commit while
    /// they are left would cost each commit a futex call and a thread switch.)
    private var maintenanceStarts = false
    /// When the last write ended (uptime, ns): a pass waits for a gap without writes after it.
    private var lastWriteEnded: UInt64 = 0
    /// How long the writer thread waits without a write before a pass of maintenance, in ns: a
    /// write that arrives during a pass waits for it, so passes run only in gaps between writes.
    static let maintenanceDelay: UInt64 = 2_000_000
    /// Journal keys one pass of maintenance removes at most (about a millisecond's work).
    static let keysPerMaintenancePass = 1_024

    init(core: StoreCore) { self.core = core }

    /// Whether the calling thread is the writer thread (a write inside a write would deadlock).
    var isWriterThread: Bool {
        condition.lock()
        defer { condition.unlock() }
        let me = pthread_self()
        return [writerThread, inlineThread].contains { $0.map { pthread_equal($0, me) != 0 } ?? false }
    }

    /// Runs a caller's requests (at most ``maximumBatch``), in order: on the calling thread when
    /// no other write is running or waiting and the writers of a group may not be coming back
    /// (``writersComeBack()``), else through the writer thread (joining its group commit), and
    /// then `wait`s (an async caller passes a `wait` that returns at once: its
    /// requests' completions resume it).
    func perform(_ requests: [Request], wait: () -> Void) throws {
        precondition(requests.count <= Self.maximumBatch, "an inline batch shares one commit")
        condition.lock()
        guard !isShutDown else {
            condition.unlock()
            throw FeedstoreError.storeClosed(path: core.path)
        }
        guard !isBusy && pending.isEmpty && !writersComeBack() else {
            condition.unlock()
            try submit(requests)
            return wait()
        }
        isBusy = true
        inlineThread = pthread_self()
        condition.unlock()
        process(requests)
        condition.lock()
        inlineThread = nil
        isBusy = false
        lastWriteEnded = DispatchTime.now().uptimeNanoseconds
        // Maintenance runs on the writer thread, which inline writes alone never start.
        if trimmedKeysLeft { startWriterThread() }
        // Only requests queued meanwhile, a waiting shutdown or maintenance to begin need a
        // wake-up. Waking the idle writer thread after every inline commit would cost a futex
        // call and a thread switch.
        if !pending.isEmpty || isShutDown || maintenanceStarts {
            maintenanceStarts = false
            condition.broadcast()
        }
        condition.unlock()
    }

    /// Whether the writers of the writer thread's last group, if it held more than one, may be
    /// coming back now (before ``comeBackUntil``). The first of them to come back finds nothing
    /// running or waiting; run inline, its write would commit alone, with a sync of its own,
    /// while the others queue behind it (with 16 async writers, 10 rows a commit instead of 16).
    /// Through the writer thread, it waits a little for them (``lingerShare``) and they share
    /// the commit. The caller holds the lock.
    private func writersComeBack() -> Bool {
        DispatchTime.now().uptimeNanoseconds < comeBackUntil
    }

    /// Until when (uptime, ns) the writers of the writer thread's last group may be coming back:
    /// its end plus its commit's time (at most ``comeBackWindow``), or 0 after a group of one.
    private var comeBackUntil: UInt64 = 0
    /// The longest a write is sent to the writer thread after a group it did not belong to
    /// (``writersComeBack()``), in ns: a commit that took longer (a checkpoint's) does not
    /// make a lone writer give up its inline commits for as long. A test lengthens it.
    var comeBackWindow: UInt64 {
        get { condition.withLock { comeBackNanoseconds } }
        set { condition.withLock { comeBackNanoseconds = newValue } }
    }
    private var comeBackNanoseconds: UInt64 = 2_000_000

    /// Requests waiting for the writer thread (for tests).
    var queuedRequests: Int {
        condition.lock()
        defer { condition.unlock() }
        return pending.count
    }

    /// Whether no write is running or waiting (for tests: the writer thread clears its busy
    /// flag after the completions of its batch have resumed their callers).
    var isIdle: Bool {
        condition.lock()
        defer { condition.unlock() }
        return !isBusy && pending.isEmpty
    }

    /// What the queue holds and does, for a test's failure message.
    var stateDescription: String {
        condition.lock()
        defer { condition.unlock() }
        return "\(pending.count) queued, busy \(isBusy), writer thread running \(isRunning) (inline write \(inlineThread != nil)), "
            + "last group \(lastGroup) in \(lastCommitNanoseconds / 1_000) µs, trimmed keys left \(trimmedKeysLeft)"
    }

    func submit(_ request: Request) throws { try submit(CollectionOfOne(request)) }

    /// Queues `requests` together, in order, so that they share commits (up to
    /// ``maximumBatch`` a commit). One request goes in as `CollectionOfOne`: no array is made
    /// for each async write.
    func submit<Requests: Collection<Request>>(_ requests: Requests) throws {
        condition.lock()
        defer { condition.unlock() }
        guard !isShutDown else { throw FeedstoreError.storeClosed(path: core.path) }
        pending.append(contentsOf: requests)
        startWriterThread()
        // While the writer thread waits for the last group's writers to come back, it wakes by
        // itself at the deadline: waking it for each one that does would cost a futex call and
        // a thread switch each, for a thread that would only go back to waiting.
        if pending.count == requests.count || pending.count >= lastGroup { condition.broadcast() }
    }

    /// Starts the writer thread unless it runs. The caller holds the lock.
    private func startWriterThread() {
        guard !isRunning, !isShutDown else { return }
        isRunning = true
        NamedThread.start("fs writer", stackSize: 8 << 20) { [self] in run() }
    }

    /// Finishes the waiting requests and any write running inline, then stops the thread.
    func shutdown() {
        condition.lock()
        let wasRunning = isRunning
        isShutDown = true
        condition.broadcast()
        while isBusy && !wasRunning { condition.wait() }
        condition.unlock()
        if wasRunning { stopped.wait() }
    }

    private func run() {
        condition.lock()
        writerThread = pthread_self()
        var lingerUntil: Date?
        while true {
            if !pending.isEmpty && !isBusy {
                // The writers of the last group come back one by one once it commits. Waiting
                // a little (a quarter of a commit at most) lets them share the next commit,
                // instead of a commit of one followed by a commit of the rest.
                if pending.count < lastGroup && !isShutDown {
                    let deadline = lingerUntil ?? Date(timeIntervalSinceNow: Double(lastCommitNanoseconds / Self.lingerShare) / 1e9)
                    lingerUntil = deadline
                    if Date() < deadline {
                        _ = condition.wait(until: deadline)
                        continue
                    }
                }
                lingerUntil = nil
                let batch = Array(pending.prefix(Self.maximumBatch))
                pending.removeFirst(batch.count)
                isBusy = true
                condition.unlock()
                let start = DispatchTime.now().uptimeNanoseconds
                process(batch)
                let elapsed = DispatchTime.now().uptimeNanoseconds - start
                condition.lock()
                lastGroup = batch.count
                lastCommitNanoseconds = elapsed
                isBusy = false
                lastWriteEnded = DispatchTime.now().uptimeNanoseconds
                comeBackUntil = batch.count > 1 ? lastWriteEnded + min(elapsed, comeBackNanoseconds) : 0
                condition.broadcast()
                continue
            }
            if pending.isEmpty && trimmedKeysLeft && !isShutDown {
                // Asleep with a deadline: inline writes meanwhile (one may be running now) move
                // the deadline on without waking the thread, which looks again when it passes.
                maintenanceStarts = false
                let now = DispatchTime.now().uptimeNanoseconds
                let due = isBusy ? now + Self.maintenanceDelay : lastWriteEnded + Self.maintenanceDelay
                if now < due {
                    _ = condition.wait(until: Date(timeIntervalSinceNow: Double(due - now) / 1e9))
                    continue
                }
                isBusy = true
                condition.unlock()
                let left = removeTrimmedKeys()
                condition.lock()
                trimmedKeysLeft = left
                isBusy = false
                condition.broadcast()
                continue
            }
            // Stop once nothing waits and no inline write is still running.
            if isShutDown && pending.isEmpty && !isBusy { break }
            condition.wait()
        }
        writerThread = nil
        condition.unlock()
        stopped.signal()
    }

    /// One pass of maintenance: removes at most ``keysPerMaintenancePass`` keys of trimmed
    /// journal commits in a transaction of its own (no journal commit: watchers see nothing).
    /// - Returns: whether more are left. A failure leaves them to the next writes, which remove
    ///   their share as before.
    private func removeTrimmedKeys() -> Bool {
        do {
            return try core.mapLock.withShared {
                let log = core.newMutationLog()
                let txn = try core.begin(readOnly: false, log: log)
                let left = try JournalTrimmer(core: core).removeTrimmedKeys(in: txn, budget: Self.keysPerMaintenancePass)
                try core.commit(txn, log: log)
                try core.syncCommitIfUnsynced()
                return left
            }
        } catch {
            return false
        }
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
    ///
    /// Requests run one after another in the one transaction, with no nested transaction each:
    /// LMDB allocates megabytes of page lists for every nested transaction. A request that throws
    /// has left its partial writes in the transaction, so the whole transaction is rolled back and
    /// the batch runs again without it (a write closure may run more than once).
    private func commit(_ batch: [Request]) throws -> [Result<Void, any Error>] {
        var failures: [Int: any Error] = [:]
        while failures.count < batch.count {
            if let outcomes = try attempt(batch, skipping: &failures) { return outcomes }
        }
        return Self.outcomes(of: batch, failures: failures)
    }

    private static func outcomes(of batch: [Request], failures: [Int: any Error]) -> [Result<Void, any Error>] {
        batch.indices.map { i in failures[i].map { Result<Void, any Error>.failure($0) } ?? .success(()) }
    }

    /// One try at the batch minus `failures` (at least one request is left): the outcomes once
    /// committed, or nil (with the request that threw added to `failures`) when it must run again.
    private func attempt(_ batch: [Request], skipping failures: inout [Int: any Error]) throws -> [Result<Void, any Error>]? {
        let log = core.newMutationLog()
        var txn = try core.begin(readOnly: false, log: log)
        var schema = core.schema
        guard try core.storedCatalogVersion(in: txn) == schema.catalog.version else {
            txn.abort()
            throw SchemaChangedSignal()
        }
        var lastSequence = try core.system.newestSequence(in: txn)
        var kept = core.followedEntities().map { CommittedEntries(after: lastSequence, followed: $0) }
        // Count changes go from closure to closure and are applied once, before the commit: the
        // upper nodes of a counted tree are patched once per group, not once per closure.
        var deferredCounts: WriteTransaction.DeferredCounts = []
        for (i, request) in batch.enumerated() where failures[i] == nil {
            // Handed over, not shared: a second reference would make each closure's first count
            // change copy every change the group has deferred.
            let tx = WriteTransaction(core: core, transaction: txn, schema: schema, sequence: lastSequence + 1, kept: kept.take(),
                                      deferredCounts: consume deferredCounts, buffers: spareBuffers.take())
            defer { spareBuffers = tx.takeRecordBuffers() }
            do {
                try request.run(tx)
                try tx.finish()
            } catch {
                tx.detach()?.abort()
                if Self.isMapFull(error) { throw error }
                failures[i] = core.translate(error)
                return nil
            }
            schema = tx.schema
            kept = tx.kept
            deferredCounts = tx.takeDeferredCounts()
            lastSequence = tx.committedSequence ?? lastSequence
            guard let next = tx.detach() else { throw FeedstoreError.transactionEnded }
            txn = next
        }
        try WriteTransaction.apply(deferredCounts, in: txn)
        // Before trimming, so that retention sees where the cursors are now.
        let settled = try core.deferredCursorMoves.write(in: txn, cursors: DurableCursors(core: core))
        let keysLeft = try JournalTrimmer(core: core).trim(in: txn, lastSequence: lastSequence, budget: JournalTrimmer.removalsPerRun,
                                                           minimumRun: JournalTrimmer.softTrimRun)
        // Durable before anyone hears of it.
        try core.commit(txn, log: log)
        condition.withLock {
            let left = keysLeft && core.options.removesTrimmedKeysWhenIdle
            if left && !trimmedKeysLeft { maintenanceStarts = true }
            trimmedKeysLeft = left
        }
        core.deferredCursorMoves.committed(settled)
        core.publish(schema)
        core.published(lastSequence, entries: kept)
        // Committed either way: a sync that fails here is tried again before the next commit.
        try? core.syncCommitIfUnsynced()
        return Self.outcomes(of: batch, failures: failures)
    }
}

/// Internal signal: another handle changed the catalog; reload and retry.
struct SchemaChangedSignal: Error {}
