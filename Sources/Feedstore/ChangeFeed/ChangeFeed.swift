import Foundation

/// The store's one reader of new commits in this process. Each commit is read once, decoded by
/// catalog numbers, and each entry is routed to exactly the subscriptions it concerns: range
/// subscriptions through a ``RangeTree`` per index, single records through a table by primary
/// key, related records by entity. A subscription no entry reaches does no work and is never
/// woken. Cycle: commit → fold → route → wake.
///
/// Commits of this process are folded by the writer as soon as they are durable. Commits of other
/// processes (or of another environment on the same files) are folded when the store's
/// ``CommitSignal`` reports them, from the first wait on (no timer: an idle store wakes
/// nothing), and by each consumer's own ``synchronize(_:through:in:)``, which folds what the
/// feed has not read yet before it takes the subscription's changes.
///
/// Lock order: a consumer's lock, then the map lock (a transaction), then the feed's lock. The
/// feed's lock is never held while beginning a transaction.
final class ChangeFeed: CommitObserver, @unchecked Sendable {
    /// More changed records than this for one subscription (or journal entries in one span) make
    /// its consumers take whole new snapshots, bounding memory whatever the backlog.
    static let backlogLimit = CommittedEntries.limit

    private struct RouteKey: Hashable {
        var entity: UInt32
        var index: UInt32
    }

    private unowned let core: StoreCore
    private let lock = NSLock()
    // Guarded by `lock`:
    /// The newest commit folded.
    private var head: UInt64 = 0
    private var ranges: [UInt32: [UInt32: RangeTree<FeedSubscription>]] = [:]
    private var records: [UInt32: [[UInt8]: [FeedSubscription]]] = [:]
    private var related: [UInt32: [FeedSubscription]] = [:]
    /// Subscriptions per entity they read entries of: only those entities' entries are decoded.
    private var entityUses: [UInt32: Int] = [:]
    /// Grows when an entity gains its first subscription, so a fold read without it is read again.
    private var generation: UInt64 = 0
    /// The entities with subscriptions and the generation, kept for writers; nil with none.
    private var followed: FollowedEntities?
    private var subscriptionCount = 0
    private var nextSerial: UInt64 = 0
    private var stamp: UInt64 = 0
    private var waiting = 0
    /// Whether the commit signal reports to the feed (from the first wait on).
    private var listening = false
    private var closed = false

    init(core: StoreCore) { self.core = core }

    /// A new subscription; the feed routes to it from its first ``synchronize(_:through:in:)``.
    func subscription(_ target: FeedSubscription.Target, related: [UInt32] = []) -> FeedSubscription {
        lock.withLock {
            nextSerial += 1
            return FeedSubscription(serial: nextSerial, target: target, relatedEntities: related)
        }
    }

    // MARK: Folding

    /// Brings the feed to `head`, the newest commit `tx` sees, and takes the changes folded for
    /// `subscription` since it last took them (registering it on its first call, with none).
    /// Returns nil when the feed is already past `head`: the caller must try again in a newer
    /// transaction, since the subscription's changes reach past what `tx` shows.
    func synchronize(_ subscription: FeedSubscription, through head: UInt64, in tx: ReadTransaction) throws -> FoldedChanges? {
        let wake = try tx.access { txn in try advance(through: head, in: txn) }
        defer { wake.forEach { $0() } }
        return lock.withLock {
            if self.head > head { return nil }
            if !subscription.isRegistered {
                register(subscription)
                return FoldedChanges()
            }
            defer {
                subscription.changes = FoldedChanges()
                subscription.signalled = false
            }
            return subscription.changes
        }
    }

    /// The entities whose entries the feed reads, for the writer to keep (``CommitObserver``).
    func followedEntities() -> FollowedEntities? { lock.withLock { followed } }

    /// Records that this process committed through `sequence`, routing the new commits when
    /// anyone subscribes. The writer's own copy of the entries is routed when it covers exactly
    /// the commits after the feed's head and the entities followed now; otherwise the commits
    /// are read back from the journal.
    func published(_ sequence: UInt64, entries: CommittedEntries?) {
        let handled: (done: Bool, wake: [@Sendable () -> Void]) = lock.withLock {
            if closed || sequence <= head { return (true, []) }
            if subscriptionCount == 0 {
                head = sequence
                return (true, [])
            }
            guard let entries, entries.isComplete, entries.after == head, entries.followed.stamp == generation else { return (false, []) }
            var wake: [@Sendable () -> Void] = []
            for (committed, record) in entries.records { route(JournalFold.Entry(sequence: committed, record: record), wake: &wake) }
            head = sequence
            return (true, wake)
        }
        handled.wake.forEach { $0() }
        if !handled.done { fold() }
    }

    /// Folds whatever the journal holds past the feed's head. A failure to read leaves the head
    /// where it is and wakes every waiter: each consumer's own synchronization then reports it.
    private func fold() {
        do {
            let wake = try core.withReadTransaction { txn in try advance(through: try core.system.newestSequence(in: txn), in: txn) }
            wake.forEach { $0() }
        } catch {
            wakeAll()
        }
    }

    /// Folds the commits after the feed's head through `target`, read in `txn`; returns the
    /// waiters to resume once no lock is held.
    private func advance(through target: UInt64, in txn: borrowing LMDBTransaction) throws -> [@Sendable () -> Void] {
        while true {
            let span: (from: UInt64, entities: Set<UInt32>, generation: UInt64)? = lock.withLock {
                if head >= target { return nil }
                if entityUses.isEmpty {
                    head = target
                    return nil
                }
                return (head, followed?.entities ?? [], generation)
            }
            guard let span else { return [] }
            let readGeneration = span.generation
            let entries = try JournalFold.read(txn, system: core.system, after: span.from, through: target, entities: span.entities,
                                               limit: Self.backlogLimit)
            let result: [@Sendable () -> Void]? = lock.withLock {
                // An entity subscribed meanwhile was not read: read again.
                if generation != readGeneration && head < target { return nil }
                var wake: [@Sendable () -> Void] = []
                if let entries {
                    for entry in entries where entry.sequence > head { route(entry, wake: &wake) }
                } else if head < target {
                    // Behind the journal's retention or over the limit: everyone starts again.
                    forEachSubscription { subscription in
                        subscription.changes.overflow()
                        notify(subscription, &wake)
                    }
                }
                head = max(head, target)
                return wake
            }
            if let result { return result }
        }
    }

    /// Folds one entry into the subscriptions it concerns.
    private func route(_ entry: JournalFold.Entry, wake: inout [@Sendable () -> Void]) {
        let record = entry.record
        stamp += 1
        if let subscriptions = records[record.entityID]?[record.primaryKey] {
            for subscription in subscriptions {
                subscription.changes.fold(entry, before: nil, after: nil, limit: Self.backlogLimit)
                notify(subscription, &wake)
            }
        }
        if let trees = ranges[record.entityID] {
            for change in record.indexChanges {
                guard let tree = trees[change.indexID] else { continue }
                for key in [change.before, change.after] {
                    guard let key else { continue }
                    tree.forEach(containing: key) { subscription in
                        guard subscription.lastStamp != stamp else { return }
                        subscription.lastStamp = stamp
                        subscription.changes.fold(entry, before: change.before, after: change.after, limit: Self.backlogLimit)
                        notify(subscription, &wake)
                    }
                }
            }
        }
        for subscription in related[record.entityID] ?? [] {
            subscription.changes.foldRelated(entry, limit: Self.backlogLimit)
            notify(subscription, &wake)
        }
    }

    private func notify(_ subscription: FeedSubscription, _ wake: inout [@Sendable () -> Void]) {
        if let waiter = subscription.folded() {
            waiting -= 1
            wake.append(waiter)
        }
    }

    // MARK: Routing table

    private func register(_ subscription: FeedSubscription) {
        subscription.isRegistered = true
        subscriptionCount += 1
        switch subscription.target {
        case let .range(entity, index, keys):
            let tree = ranges[entity, default: [:]][index] ?? RangeTree()
            tree.insert(keys, serial: subscription.serial, value: subscription)
            ranges[entity, default: [:]][index] = tree
        case let .record(entity, primaryKey):
            records[entity, default: [:]][primaryKey, default: []].append(subscription)
        }
        for entity in subscription.relatedEntities { related[entity, default: []].append(subscription) }
        for entity in [subscription.target.entity] + subscription.relatedEntities {
            entityUses[entity, default: 0] += 1
            if entityUses[entity] == 1 { generation += 1 }
        }
        followed = FollowedEntities(entities: Set(entityUses.keys), stamp: generation)
    }

    /// Stops routing to `subscription`; a consumer waiting on it returns.
    func remove(_ subscription: FeedSubscription) {
        let waiter: (@Sendable () -> Void)? = lock.withLock {
            guard subscription.isRegistered else { return takeWaiter(subscription) }
            subscription.isRegistered = false
            subscriptionCount -= 1
            switch subscription.target {
            case let .range(entity, index, keys):
                ranges[entity]?[index]?.remove(keys, serial: subscription.serial)
                if ranges[entity]?[index]?.count == 0 { ranges[entity]?[index] = nil }
                if ranges[entity]?.isEmpty == true { ranges[entity] = nil }
            case let .record(entity, primaryKey):
                records[entity]?[primaryKey]?.removeAll { $0 === subscription }
                if records[entity]?[primaryKey]?.isEmpty == true { records[entity]?[primaryKey] = nil }
                if records[entity]?.isEmpty == true { records[entity] = nil }
            }
            for entity in subscription.relatedEntities {
                related[entity]?.removeAll { $0 === subscription }
                if related[entity]?.isEmpty == true { related[entity] = nil }
            }
            for entity in [subscription.target.entity] + subscription.relatedEntities {
                entityUses[entity, default: 0] -= 1
                if entityUses[entity] == 0 { entityUses[entity] = nil }
            }
            followed = entityUses.isEmpty ? nil : FollowedEntities(entities: Set(entityUses.keys), stamp: generation)
            return takeWaiter(subscription)
        }
        waiter?()
    }

    /// Routes `subscription` by a new target from now on (its index was rebuilt under another
    /// number); what was folded for the old one is dropped, so its consumer starts again.
    func retarget(_ subscription: FeedSubscription, to target: FeedSubscription.Target) {
        remove(subscription)
        lock.withLock {
            subscription.target = target
            subscription.changes = FoldedChanges()
        }
    }

    private func forEachSubscription(_ body: (FeedSubscription) -> Void) {
        var seen = Set<ObjectIdentifier>()
        func visit(_ subscription: FeedSubscription) {
            if seen.insert(ObjectIdentifier(subscription)).inserted { body(subscription) }
        }
        for trees in ranges.values {
            for tree in trees.values { tree.forEachValue(visit) }
        }
        for table in records.values { for list in table.values { list.forEach(visit) } }
        for list in related.values { list.forEach(visit) }
    }

    // MARK: Waiting

    /// Returns once `subscription` has news (folded changes or a signal), the store closes, or the
    /// task is cancelled.
    func wait(for subscription: FeedSubscription) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                guard enqueue(subscription, resume: { continuation.resume() }) else { return continuation.resume() }
                listenForOtherCommits()
                // Cancelled before the waiter was queued: the handler found nothing to resume.
                // Whoever takes the waiter resumes it, exactly once.
                if Task.isCancelled { lock.withLock { takeWaiter(subscription) }?() }
            }
        } onCancel: {
            lock.withLock { takeWaiter(subscription) }?()
        }
    }

    /// Blocks the calling thread until `subscription` has news, the store closes, or `timeout`
    /// seconds pass; returns false on timeout.
    func waitBlocking(for subscription: FeedSubscription, timeout: TimeInterval) -> Bool {
        let signal = DispatchSemaphore(value: 0)
        guard enqueue(subscription, resume: { signal.signal() }) else { return true }
        listenForOtherCommits()
        if signal.wait(timeout: .now() + timeout) == .success { return true }
        // Timed out, unless a wake-up raced the timeout.
        if lock.withLock({ takeWaiter(subscription) }) != nil { return false }
        signal.wait()
        return true
    }

    /// Gives `subscription` news without a commit (its consumer moved its window or stopped).
    func signal(_ subscription: FeedSubscription) {
        let waiter: (@Sendable () -> Void)? = lock.withLock {
            subscription.signalled = true
            return takeWaiter(subscription)
        }
        waiter?()
    }

    /// Registers a waiter unless the subscription has news already or the store is closed (then
    /// returns false and the caller must not wait).
    private func enqueue(_ subscription: FeedSubscription, resume: @escaping @Sendable () -> Void) -> Bool {
        lock.withLock {
            if subscription.hasNews || closed || !subscription.isRegistered { return false }
            if subscription.waiter == nil { waiting += 1 }
            subscription.waiter = resume
            return true
        }
    }

    private func takeWaiter(_ subscription: FeedSubscription) -> (@Sendable () -> Void)? {
        let waiter = subscription.takeWaiter()
        if waiter != nil { waiting -= 1 }
        return waiter
    }

    /// From the first wait on, has the store's commit signal report commits, whichever process
    /// makes them (``othersCommitted(through:)``); the first time, looks at the journal once for
    /// those made before the report was in place (after the waiting consumer last synchronized).
    private func listenForOtherCommits() {
        let start = lock.withLock {
            if listening || closed { return false }
            listening = true
            return true
        }
        guard start else { return }
        // A signal already listened to (a wait for the next commit began it) looks at the
        // journal now for this feed.
        if !core.listenForOtherCommits() { core.othersCommitted() }
    }

    /// Folds commits the journal holds past the feed's head (the commit signal reported one
    /// that may be another process's; the signal also reports this process's own commits,
    /// already folded). Folded whether or not anyone waits right now: a consumer about to wait
    /// would otherwise miss the commit.
    func othersCommitted(through newest: UInt64) {
        if lock.withLock({ !closed && newest > head }) { fold() }
    }

    /// Wakes every waiter once (each checks its own state and waits again if it needs to).
    private func wakeAll() {
        let all: [@Sendable () -> Void] = lock.withLock {
            var all: [@Sendable () -> Void] = []
            forEachSubscription { if let waiter = takeWaiter($0) { all.append(waiter) } }
            return all
        }
        all.forEach { $0() }
    }

    /// Wakes every waiter for good (the store is closing).
    func close() {
        lock.withLock { closed = true }
        wakeAll()
    }
}

extension StoreCore {
    /// The store's change feed in this process, made by the first watcher that asks.
    var feed: ChangeFeed { commitObserver { ChangeFeed(core: self) } }
}
