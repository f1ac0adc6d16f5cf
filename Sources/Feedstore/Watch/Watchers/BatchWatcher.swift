import Foundation

/// A live query: an `AsyncSequence` of change batches. Its cycle is journal → positions →
/// batch → deliver. The first batch is the whole snapshot. Each later one takes the consumer from
/// the snapshot it holds to the store's current state, computed when the consumer asks from the
/// changes the store's change feed routed to this watcher. So a slow consumer gets one batch
/// spanning every commit it missed, never part of one, and memory stays bounded. Commits from
/// other handles and other processes are delivered like local ones.
///
/// One class serves every kind of watcher; the call that opens it chooses the kind:
/// - ``Watcher`` (`store.watch(query)`): typed ``ChangeBatch``es carrying the entity's values;
/// - ``IndexWatcher`` (`store.watchIndexes(query)`): ``IndexBatch``es of positions, rows read on
///   demand with ``object(at:)`` from the snapshot of the last batch taken;
/// - ``DynamicWatcher`` and ``DynamicIndexWatcher``: the same for queries named at run time,
///   with records as fields by name.
///
/// Deliveries: ``poll()``, blocking ``next(timeout:)``, `for try await`, or a callback on a
/// queue (``deliver(on:onError:_:)``) or on the main actor (``deliverOnMainActor(onError:_:)``).
///
/// ```swift
/// let inbox = store.watch(Query(Message.self, index: "byFolderDate", range: .prefix(1)))
/// for try await batch in inbox { mirror.apply(batch) }
/// ```
public final class BatchWatcher<Batch: Sendable, Row>: AsyncSequence, @unchecked Sendable {
    /// The values the sequence delivers.
    public typealias Element = Batch

    let store: Store
    /// Guarded by `lock`: batches are computed one at a time.
    private let engine: WatchEngine
    private let lock = NSLock()
    private let cancelled = Protected(false)
    /// Turns the engine's rows into the batch this watcher delivers (adding values, or ranges).
    private let makeBatch: (RowChanges, ReadTransaction) throws -> Batch
    /// Reads the row ``object(at:)`` returns, given its index entry key.
    private let makeRow: (ReadTransaction, _ entryKey: [UInt8], IndexSchema) throws -> Row
    /// The read transaction of the last batch taken (indexes-only watchers): what rows are read
    /// from, so they always agree with the batches.
    private var snapshot: PinnedSnapshot?

    init(store: Store, engine: WatchEngine, makeRow: @escaping (ReadTransaction, _ entryKey: [UInt8], IndexSchema) throws -> Row,
         makeBatch: @escaping (RowChanges, ReadTransaction) throws -> Batch)
    {
        self.store = store
        self.engine = engine
        self.makeRow = makeRow
        self.makeBatch = makeBatch
    }

    deinit {
        snapshot?.release()
        engine.stop()
    }

    /// The journal sequence of the snapshot described by the batches delivered so far (it
    /// advances past commits that change nothing the query shows).
    public var sequence: UInt64 { lock.withLock { engine.sequence } }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { cancelled.current }

    /// The next batch if the store changed what the query shows since the last one (the initial
    /// batch first), without waiting; nil otherwise.
    /// - Complexity: O(k log n) for k changed rows (the initial batch is the whole snapshot in
    ///   objects mode, O(sections · log n) in indexes-only mode).
    public func poll() throws -> Batch? {
        lock.lock()
        defer { lock.unlock() }
        if isCancelled { return nil }
        if engine.indexesOnly { return try pollPinned() }
        return try store.readRetrying { tx -> Batch?? in
            switch try engine.nextBatch(in: tx) {
            case let .batch(rows): return .some(try makeBatch(rows, tx))
            case .unchanged: return .some(nil)
            case .retry: return nil
            }
        }
    }

    /// Computes the batch in a transaction that stays open for the consumer's reads. When nothing
    /// the watcher shows changed, the newer transaction shows the same rows at the same paths, so
    /// it replaces the older one: a watcher that is polled does not hold back LMDB's reuse of
    /// pages freed since its last batch.
    private func pollPinned() throws -> Batch? {
        while true {
            let pin = try store.core.pinSnapshot()
            let step = try pin.read { tx -> Batch?? in
                switch try engine.nextBatch(in: tx) {
                case let .batch(rows): return .some(try makeBatch(rows, tx))
                case .unchanged: return .some(nil)
                case .retry: return nil
                }
            }
            guard case let .some(.some(batch)) = step else {
                pin.release()
                continue  // the feed was past the snapshot, or the map grew and released it
            }
            if batch == nil, snapshot == nil {
                pin.release()  // no batch taken yet: nothing is read from a snapshot
                return nil
            }
            snapshot?.release()
            snapshot = pin
            return batch
        }
    }

    /// Waits up to `timeout` seconds for the next batch, blocking the calling thread; nil on
    /// timeout or cancellation. For consumers that run on their own threads (command-line tools,
    /// or code that must not depend on Swift concurrency's shared threads).
    public func next(timeout: TimeInterval) throws -> Batch? { try blockingNext(timeout: timeout) }

    /// Moves a windowed watcher's window (paging): the next batch takes the consumer from the
    /// old window to the new one. Has no effect on a watcher opened without a window.
    /// - Complexity: the next batch costs O(log n + r) for r rows entering or leaving the window.
    public func setWindow(offset: Int, limit: Int) {
        lock.withLock {
            engine.requestWindow(offset: offset, limit: limit)
            engine.signal()
        }
    }

    /// Stops the watcher: iteration ends, blocked ``next(timeout:)`` calls return nil, and the
    /// snapshot rows were read from is released.
    public func cancel() {
        cancelled.withLock { $0 = true }
        lock.withLock {
            snapshot?.release()
            snapshot = nil
            engine.stop()
        }
    }

    /// Calls `handler` on `queue` with each batch. The next batch is computed after the handler
    /// returns, so a slow handler receives coalesced batches. Errors (the store closing, damaged
    /// data) go to `onError`, after which deliveries stop. Cancel the subscription, or let it go,
    /// to stop.
    public func deliver(on queue: DispatchQueue, onError: (@Sendable (any Error) -> Void)? = nil,
                        _ handler: @escaping @Sendable (Batch) -> Void) -> WatchSubscription
    {
        let task = Task { [self] in
            do {
                for try await batch in self {
                    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                        queue.async {
                            handler(batch)
                            done.resume()
                        }
                    }
                }
            } catch {
                queue.async { onError?(error) }
            }
        }
        return WatchSubscription(task: task, stop: { [self] in cancel() })
    }

    /// Calls `handler` on the main actor with each batch: the form for a view controller, whose
    /// data source and table view are main-actor state the handler may touch directly. The next
    /// batch is computed off the main actor after the handler returns, so a slow handler
    /// receives coalesced batches. Errors (the store closing, damaged data) go to `onError`,
    /// after which deliveries stop. Cancel the subscription, or let it go, to stop.
    public func deliverOnMainActor(onError: (@MainActor (any Error) -> Void)? = nil,
                                   _ handler: @escaping @MainActor (Batch) -> Void) -> WatchSubscription
    {
        let task = Task { @MainActor [self] in
            do {
                for try await batch in self { handler(batch) }
            } catch {
                onError?(error)
            }
        }
        return WatchSubscription(task: task, stop: { [self] in cancel() })
    }

    /// Waits for and delivers the next value.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let watcher: BatchWatcher

        /// Waits for the next batch; nil once the watcher is cancelled or its task is.
        public mutating func next() async throws -> Batch? { try await watcher.asyncNext() }
    }

    /// An iterator over the values.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(watcher: self) }

    // MARK: Rows of the snapshot (indexes-only watchers)

    /// Reads in the snapshot of the last batch taken (caller holds the lock). When the map grew
    /// and released it, reads the current state and makes the next batch a reset, so the
    /// consumer's shape catches up.
    private func readShown<R>(_ read: (ReadTransaction) throws -> R?) throws -> R? {
        // A filtered query's reads go through the rows the engine keeps for that snapshot.
        let read = { [engine] (tx: ReadTransaction) throws -> R? in
            if engine.query.filter != nil { _ = try engine.shownQuery(in: tx) }
            return try read(tx)
        }
        if let snapshot {
            if let value = try snapshot.read(read) { return value }
            engine.resetPending = true
        }
        return try store.read(read)
    }

    /// The row at `path`; see the extension for indexes-only watchers.
    fileprivate func row(at path: RowPath) throws -> Row? {
        try lock.withLock {
            try readShown { [engine] tx in
                let resolved = try engine.shownQuery(in: tx)
                guard let position = engine.layout?.listPosition(of: path),
                      let key = try resolved.entryKey(at: position, reverse: engine.query.reverse, in: tx) else { return nil }
                return try makeRow(tx, key, resolved.index)
            }
        }
    }

    /// The path of the record with primary key `id`; see the extension for indexes-only watchers.
    fileprivate func path(ofID id: FieldValue) throws -> RowPath? {
        try lock.withLock {
            try readShown { [engine] tx in
                let resolved = try engine.shownQuery(in: tx)
                guard let fields = try tx.record(entity: engine.query.entity, id: id),
                      let key = try resolved.index.key(of: fields, primaryKey: try KeyEncoding.encode([id]), in: resolved.keys) else { return nil }
                return try engine.path(ofKey: key, in: tx, resolved)
            }
        }
    }

    /// What the snapshot of the last batch taken shows (nothing before the first).
    var shownLayout: ListLayout { lock.withLock { engine.layout } ?? .empty(descending: engine.query.reverse) }

    /// The rows `rows` of `section`, read in one walk from the snapshot of the last batch taken;
    /// fewer when the range runs past the section.
    fileprivate func rows<R>(section: Int, rows: Range<Int>,
                             _ read: (ReadTransaction, WatchTarget, _ offset: Int, _ limit: Int) throws -> [R]) throws -> [R]
    {
        guard !rows.isEmpty else { return [] }
        return try lock.withLock {
            try readShown { [engine] tx -> [R]? in
                let start = RowPath(section: section, row: rows.lowerBound)
                guard let layout = engine.layout, let position = layout.listPosition(of: start) else { return [] }
                let limit = Swift.min(rows.count, layout.shown.sections[section].count - rows.lowerBound)
                return try read(tx, engine.query, position, limit)
            }
        } ?? []
    }

    /// The rows at shown positions `positions` (from 0 across sections, as a lazy list counts
    /// them), with their paths, read from the snapshot of the last batch taken in one walk per
    /// section; fewer when the range runs past the rows shown.
    fileprivate func rows<R>(shown positions: Range<Int>,
                             _ read: (ReadTransaction, WatchTarget, _ offset: Int, _ limit: Int) throws -> [R]) throws -> [(path: RowPath, row: R)]
    {
        guard !positions.isEmpty else { return [] }
        return try lock.withLock {
            try readShown { [engine] tx -> [(path: RowPath, row: R)]? in
                guard let layout = engine.layout else { return [] }
                var rows: [(path: RowPath, row: R)] = []
                for run in layout.runs(ofShown: positions) {
                    let read = try read(tx, engine.query, layout.listPosition(of: run.start)!, run.count)
                    rows += read.enumerated().map { (RowPath(section: run.start.section, row: run.start.row + $0.offset), $0.element) }
                }
                return rows
            }
        } ?? []
    }

    /// Suspends until the store's change feed routes news to this watcher (a commit in its
    /// range, a moved window), or it or the calling task is cancelled; the next ``poll()`` may
    /// then have a batch. For consumers that poll where they choose, so that the watcher's
    /// snapshot moves only there: the live-query session answers `rows` requests from it.
    /// Before the first poll, it returns at once.
    public func waitForChanges() async {
        guard !isCancelled, let subscription = waitSubscription else { return }
        await store.core.feed.wait(for: subscription)
    }
}

extension BatchWatcher: PollingLoop {
    var waitSubscription: FeedSubscription? { lock.withLock { engine.feedSubscription } }
}

/// Indexes-only watchers read rows on demand, from the snapshot of the last batch taken, so the
/// shape the consumer shows and the rows it reads always agree. Watchers that took their batches
/// at the same commit share one snapshot.
extension BatchWatcher where Batch == IndexBatch {
    /// Sections in the snapshot of the last batch taken.
    /// - Complexity: O(1).
    public var numberOfSections: Int { shownLayout.shown.count }

    /// Rows of `section` in the snapshot of the last batch taken.
    /// - Complexity: O(1).
    public func numberOfObjects(inSection section: Int) -> Int {
        let shown = shownLayout.shown
        guard shown.sections.indices.contains(section) else { return 0 }
        return shown.sections[section].count
    }

    /// The row at `path` in the snapshot of the last batch taken; nil outside it.
    /// - Complexity: O(log n).
    public func object(at path: RowPath) throws -> Row? { try row(at: path) }

    /// The sections of the snapshot of the last batch taken: the index components each groups
    /// by (empty for an unsectioned query) and its number of rows.
    /// - Complexity: O(sections).
    public var sections: [(key: [FieldValue], count: Int)] { shownLayout.shown.sections.map { ($0.key, $0.count) } }
}

extension BatchWatcher where Batch == IndexBatch, Row: Entity {
    /// The rows `rows` of `section` in the snapshot of the last batch taken, read in one walk of
    /// the index (a page of a long list); fewer when the range runs past the section.
    /// - Complexity: O(log n + k) for k rows.
    public func objects(inSection section: Int, rows: Range<Int>) throws -> [Row] {
        try self.rows(section: section, rows: rows, Self.readObjects)
    }

    /// The rows at positions `positions` of the snapshot of the last batch taken, counted from 0
    /// across sections (what a lazy list counts), in one walk of the index per section; fewer
    /// when the range runs past the rows shown.
    /// - Complexity: O(s log n + k) for k rows in s sections.
    public func objects(at positions: Range<Int>) throws -> [(path: RowPath, object: Row)] {
        try rows(shown: positions, Self.readObjects).map { ($0.path, $0.row) }
    }

    /// The rows of a run of the query's positions, read in one walk of the index.
    private static func readObjects(_ tx: ReadTransaction, _ query: WatchTarget, offset: Int, limit: Int) throws -> [Row] {
        try tx.query(Row.self, index: query.index, range: query.range, reverse: query.reverse, offset: offset, limit: limit, filter: query.filter)
    }

    /// The path of the record with `id` in the snapshot of the last batch taken; nil when the
    /// query does not show it (NSFetchedResultsController's `indexPath(forObject:)`).
    /// - Complexity: O(log n).
    public func path(of id: Row.ID) throws -> RowPath? { try path(ofID: id.fieldValue) }
}

extension BatchWatcher where Batch == IndexBatch, Row == [String: FieldValue] {
    /// The records of rows `rows` of `section` in the snapshot of the last batch taken, read in
    /// one walk of the index; fewer when the range runs past the section.
    /// - Complexity: O(log n + k) for k rows.
    public func objects(inSection section: Int, rows: Range<Int>) throws -> [[String: FieldValue]] {
        try self.rows(section: section, rows: rows, Self.readRecords)
    }

    /// The records at positions `positions` of the snapshot of the last batch taken, counted
    /// from 0 across sections, with their paths, in one walk of the index per section; fewer
    /// when the range runs past the rows shown.
    /// - Complexity: O(s log n + k) for k rows in s sections.
    public func objects(at positions: Range<Int>) throws -> [(path: RowPath, record: [String: FieldValue])] {
        try rows(shown: positions, Self.readRecords).map { ($0.path, $0.row) }
    }

    /// The records of a run of the query's positions, read in one walk of the index.
    private static func readRecords(_ tx: ReadTransaction, _ query: WatchTarget, offset: Int, limit: Int) throws -> [[String: FieldValue]] {
        try tx.entries(entity: query.entity, index: query.index, range: query.range, reverse: query.reverse, offset: offset, limit: limit,
                       filter: query.filter).map(\.record)
    }

    /// The path of the record with primary key `id` in the snapshot of the last batch taken;
    /// nil when the query does not show it.
    /// - Complexity: O(log n).
    public func path(of id: FieldValue) throws -> RowPath? { try path(ofID: id) }
}
