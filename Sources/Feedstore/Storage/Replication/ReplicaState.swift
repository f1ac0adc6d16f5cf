import Foundation

/// What a replica store follows: the store it copies and how far it has applied that store's
/// commits. A follower writes it in the transaction that applies each commit, so it always
/// matches the replica's records. Applications open a replica read-only: only its follower
/// writes it.
public struct ReplicaState: Sendable, Hashable {
    /// The identifier of the store this one replicates.
    public var origin: UUID
    /// The sequence, in the stream the follower reads, of the last commit applied (0 before any).
    public var streamSequence: UInt64
    /// The origin's sequence of the last commit applied (the replica's journal has the same
    /// sequences).
    public var originSequence: UInt64
    /// When the origin made the last commit applied, to the millisecond (nil before the first,
    /// or when the stream did not say).
    public var originTime: Date?

    /// A replica state.
    public init(origin: UUID, streamSequence: UInt64, originSequence: UInt64, originTime: Date? = nil) {
        self.origin = origin
        self.streamSequence = streamSequence
        self.originSequence = originSequence
        self.originTime = originTime
    }

    /// The stored form: the origin's 16 bytes, then both sequences (8 bytes big-endian each),
    /// then, when known, the origin's commit time in milliseconds since 1970 (8 bytes, signed).
    var encoded: [UInt8] {
        var out = withUnsafeBytes(of: origin.uuid) { Array($0) }
        out.appendBigEndian(streamSequence)
        out.appendBigEndian(originSequence)
        if let originTime { out.appendBigEndian(UInt64(bitPattern: Int64((originTime.timeIntervalSince1970 * 1_000).rounded()))) }
        return out
    }

    init(decoding bytes: [UInt8]) throws {
        guard bytes.count == 32 || bytes.count == 40 else {
            throw FeedstoreError.corruptData(what: "meta replica", reason: "\(bytes.count) bytes, expected 32 or 40")
        }
        let b = bytes
        origin = UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
        streamSequence = b[16..<24].reduce(0) { $0 << 8 | UInt64($1) }
        originSequence = b[24..<32].reduce(0) { $0 << 8 | UInt64($1) }
        originTime = bytes.count == 40
            ? Date(timeIntervalSince1970: Double(Int64(bitPattern: b[32..<40].reduce(0) { $0 << 8 | UInt64($1) })) / 1_000) : nil
    }

    /// Whether two states name the same position (origin and sequences; the time aside).
    public func samePosition(as other: ReplicaState?) -> Bool {
        guard let other else { return false }
        return origin == other.origin && streamSequence == other.streamSequence && originSequence == other.originSequence
    }
}

extension ReadTransaction {
    /// The store's replica state, or nil when it is no replica.
    public func replicaState() throws -> ReplicaState? {
        try access { try $0.get(core.system.meta, key: MetaKey.replica) }.map(ReplicaState.init(decoding:))
    }
}

extension WriteTransaction {
    /// Makes the store a replica (refused to writers other than its follower from then on) and
    /// records how far it has applied its origin's commits, in this transaction.
    @_spi(Replication) public func setReplicaState(_ state: ReplicaState) throws {
        _ = try access { try $0.put(core.system.meta, key: MetaKey.replica, value: state.encoded) }
    }
}

extension WriteTransaction {
    /// Makes a copy of another store (a snapshot, a `storectl compact` copy) a replica of its own
    /// with `state`, in this transaction: it gets an identifier of its own, so that a promotion
    /// tells it from its origin, and loses the copied store's durable journal cursors, which are
    /// its origin's consumers and would keep the replica's journal from being trimmed.
    @_spi(Replication) public func makeReplica(_ state: ReplicaState) throws {
        try access { txn in
            _ = try txn.put(core.system.meta, key: MetaKey.storeIdentifier, value: StoreOpener.newStoreIdentifier())
            let cursors = DurableCursors(core: core)
            for cursor in try cursors.all(in: txn) { try cursors.remove(cursor.name, in: txn) }
            _ = try txn.put(core.system.meta, key: MetaKey.replica, value: state.encoded)
        }
    }

    /// Makes a replica a store of its own (after its promotion), in this transaction. Handles
    /// opened from then on take writes; those opened while it was a replica stay read-only.
    @_spi(Replication) public func removeReplicaState() throws {
        _ = try access { try $0.delete(core.system.meta, key: MetaKey.replica) }
    }
}
