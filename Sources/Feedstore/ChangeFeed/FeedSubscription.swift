/// One consumer's place in the store's ``ChangeFeed``: what it watches, by catalog numbers, and
/// the changes folded for it since it last took them. Every member but the constants is guarded
/// by the feed's lock.
final class FeedSubscription: @unchecked Sendable {
    /// What a subscription is routed by.
    enum Target: Equatable {
        /// A key range of one index of an entity: entries whose key before or after a change
        /// lies in the range.
        case range(entity: UInt32, index: UInt32, keys: KeyRange)
        /// One record, by encoded primary key.
        case record(entity: UInt32, primaryKey: [UInt8])

        var entity: UInt32 {
            switch self {
            case let .range(entity, _, _), let .record(entity, _): entity
            }
        }
    }

    /// Tells subscriptions apart in the feed's routing structures.
    let serial: UInt64
    var target: Target
    /// Entities whose every change concerns this subscription (related records).
    var relatedEntities: [UInt32]
    /// Whether the feed routes to it (from its first synchronization until removed).
    var isRegistered = false
    var changes = FoldedChanges()
    /// The consumer asked for a batch without a commit (a moved window, a cancel).
    var signalled = false
    /// Resumes the consumer waiting for news; taken by whoever wakes it, so it runs once.
    var waiter: (@Sendable () -> Void)?
    /// The feed's entry stamp when this subscription last folded one, so an entry found by both
    /// its before and its after key folds once.
    var lastStamp: UInt64 = 0
    /// Journal entries folded into this subscription, and times it was woken: what tests count
    /// to show that untouched watchers do nothing.
    private(set) var folds = 0
    private(set) var wakes = 0

    init(serial: UInt64, target: Target, relatedEntities: [UInt32]) {
        self.serial = serial
        self.target = target
        self.relatedEntities = relatedEntities
    }

    var hasNews: Bool { !changes.isEmpty || signalled }

    /// Counts an entry folded in, and takes the waiter to wake (nil when nobody waits).
    func folded() -> (@Sendable () -> Void)? {
        folds += 1
        if waiter != nil { wakes += 1 }
        return takeWaiter()
    }

    /// Takes the waiter to resume it (nil when nobody waits).
    func takeWaiter() -> (@Sendable () -> Void)? {
        defer { waiter = nil }
        return waiter
    }
}
