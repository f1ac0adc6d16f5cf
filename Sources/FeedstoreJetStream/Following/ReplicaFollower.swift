@_spi(Replication) import Feedstore
import Foundation

/// Applies a shipped stream, in order, to a replica store: each commit in one transaction with
/// the replica's state (origin, stream and origin sequences), so that the replica's records,
/// indexes, counts and journal match the origin's as of that commit, and a follower killed at
/// any point resumes with no commit applied twice or skipped.
///
/// The replica's journal gets one commit per origin commit, with the same entries: its watchers
/// deliver the batches the origin's deliver. Applications open a replica like any store, and
/// every write of theirs is refused: only the follower writes it.
///
/// A replica starts from an empty store (the stream must then begin with the origin's first
/// commit) or from a copy of the origin (`storectl compact`), which holds the origin's commits
/// up to some sequence; the follower continues with the next one.
public final class ReplicaFollower {
    /// The stream followed.
    public let stream: String
    /// The replica, open for its follower.
    public let replica: Store
    /// How far the replica has applied its origin's commits (nil before the first one, for a
    /// replica started from an empty store).
    public private(set) var state: ReplicaState?
    /// When the origin made the last commit this follower applied (nil before it applied one).
    public private(set) var appliedCommitTime: Date?

    private let connection: NATSConnection
    private let lock: ExclusiveFileLock
    private var subscription: OrderedSubscription?
    private var subject = ">"
    /// The catalog entries of the origin's entities, from the envelopes that carried them.
    private var schemas: [String: CatalogEntity] = [:]

    /// Opens the replica at `path` (creating an empty one when there is none) and finds where in
    /// the stream it continues.
    /// - Parameters:
    ///   - path: the replica's directory.
    ///   - connection: the NATS server and its credentials.
    ///   - stream: the stream a shipper fills.
    ///   - durability: the replica's durability. The stream holds every commit, so a replica
    ///     that loses its newest commits in a power loss applies them again: `.relaxed` by default.
    /// - Throws: ``JetStreamError`` when the stream does not exist, holds another store's
    ///   commits, or no longer holds the commits the replica needs next (re-seed it from a
    ///   copy of the origin).
    public init(path: String, connection: JetStreamConnection, stream: String, durability: Durability = .relaxed) throws {
        self.stream = stream
        var storeOptions = StoreOptions(durability: durability)
        storeOptions.writesReplica = true
        replica = try Store(path: path, options: storeOptions)
        lock = try ExclusiveFileLock(path: replica.path + "/follower.lock", refusal: { .anotherFollower(replica: path, reason: $0) })
        self.connection = try NATSConnection(connection)
        state = try replica.read { try $0.replicaState() }
        try start()
    }

    /// Sets the state of a replica seeded from a copy, and subscribes where the replica continues.
    private func start() throws {
        guard let info = try connection.streamInfo(stream) else {
            throw JetStreamError.serverRefused("following stream \(stream)", reason: "there is no such stream")
        }
        subject = info.subjects.first ?? ">"
        if state == nil, try replica.read({ try $0.journalBounds().last }) > 0 {
            // A copy of the origin: it holds the origin's commits through its journal's end.
            guard let origin = try replica.read({ try $0.storeIdentifier() }) else {
                throw JetStreamError.replicaNeedsSeed(stream: stream, reason: "the store has commits but no identifier")
            }
            let through = try replica.read { try $0.journalBounds().last }
            let streamSequence = try streamSequence(holdingAtMost: through, of: origin, info: info)
            let seeded = ReplicaState(origin: origin, streamSequence: streamSequence, originSequence: through)
            try replica.write { try $0.setReplicaState(seeded) }
            state = seeded
        }
        if let state, state.streamSequence > 0, info.firstSequence > state.streamSequence + 1 {
            throw JetStreamError.replicaNeedsSeed(stream: stream, reason: "the stream starts at message \(info.firstSequence); the replica needs message \(state.streamSequence + 1)")
        }
        subscription = try connection.subscribe(stream: stream, subject: subject, from: (state?.streamSequence ?? 0) + 1)
    }

    /// The stream sequence of the last message holding an origin commit at or before `through`
    /// (0 when the stream's first message comes after it), found by bisecting the stream.
    private func streamSequence(holdingAtMost through: UInt64, of origin: UUID,
                                info: (subjects: [String], lastSequence: UInt64, firstSequence: UInt64)) throws -> UInt64
    {
        func originSequence(at sequence: UInt64) throws -> UInt64 {
            guard let message = try connection.message(stream, at: sequence), let id = message.id,
                  let named = ChangeEnvelope.parseMessageID(id)
            else { throw JetStreamError.badEnvelope(streamSequence: sequence, reason: "no Feedstore message id") }
            guard named.store == origin.uuidString.lowercased() else {
                throw JetStreamError.streamHoldsAnotherStore(stream: stream, found: named.store, expected: origin)
            }
            return named.sequence
        }
        guard info.lastSequence >= max(info.firstSequence, 1) else { return info.lastSequence }
        let first = max(info.firstSequence, 1)
        let firstOrigin = try originSequence(at: first)
        guard firstOrigin <= through + 1 else {
            throw JetStreamError.replicaNeedsSeed(stream: stream, reason: "the stream starts with commit \(firstOrigin); the copy ends at \(through)")
        }
        if firstOrigin > through { return first - 1 }
        // The last stream sequence whose origin commit is at most `through`: in [first, last].
        var low = first, high = info.lastSequence
        while low < high {
            let middle = low + (high - low + 1) / 2
            if try originSequence(at: middle) <= through { low = middle } else { high = middle - 1 }
        }
        return low
    }

    /// A commit of the stream, checked and ready to write: its records' changes and the replica's
    /// state once it is applied.
    private struct PlannedCommit {
        var changes: [(entity: String, id: FieldValue, fields: [String: FieldValue]?)]
        var next: ReplicaState
        /// When the origin made it, as the envelope writes it (parsed only for a group's last).
        var timeText: String?
    }

    /// How far the replica is behind its stream: the messages the stream holds past the
    /// replica's, and, when some are waiting, how long ago the origin made the last commit the
    /// replica applied (an upper bound on how long the oldest waiting one has waited; 0 when
    /// none is waiting, or nil when this follower has applied nothing yet).
    public func lag() throws -> (commits: UInt64, milliseconds: Double?) {
        guard let info = try connection.streamInfo(stream) else { return (0, nil) }
        let behind = info.lastSequence > (state?.streamSequence ?? 0) ? info.lastSequence - (state?.streamSequence ?? 0) : 0
        guard behind > 0 else { return (0, 0) }
        return (behind, appliedCommitTime.map { Date().timeIntervalSince($0) * 1_000 })
    }

    /// How many commits share one of the replica's write transactions (and syncs) at most.
    static let commitsPerWrite = 256

    /// Applies the messages that arrive within `wait`, at most `limit` of them. Commits that are
    /// waiting already are applied together, each as a commit of its own in the replica's journal,
    /// sharing syncs (``Store/writeEach(_:)``).
    /// - Returns: how many commits were applied.
    @discardableResult
    public func applyAvailable(limit: Int = 1_000, wait: Duration = .milliseconds(100)) throws -> Int {
        var applied = 0
        var group: [PlannedCommit] = []
        var planned = state
        while applied + group.count < limit, let message = try subscription!.next(timeout: applied + group.count == 0 ? wait : .zero) {
            guard let envelope = try check(message, after: planned) else { continue }
            if !envelope.received.schemas.isEmpty {
                // Entities are declared between commits, as on the origin.
                applied += try write(&group)
                try declare(envelope.received.schemas)
            }
            group.append(plan(envelope.received, next: envelope.next))
            planned = envelope.next
            if group.count == Self.commitsPerWrite { applied += try write(&group) }
        }
        applied += try write(&group)
        return applied
    }

    /// Applies commits until the one with origin sequence `sequence` is applied (or forever).
    /// While the server cannot be reached the replica keeps its last applied state and the
    /// follower waits: the client's ordered consumer reconnects and resumes where it was.
    /// - Parameter keepGoing: called before each round (a round applies what arrives within
    ///   100 ms); following stops when it returns false. It can read ``state``.
    public func run(untilOriginSequence sequence: UInt64? = nil, while keepGoing: () -> Bool = { true }) throws {
        while keepGoing() {
            if let sequence, let state, state.originSequence >= sequence { return }
            try applyAvailable()
        }
    }

    /// ``run(untilOriginSequence:while:)`` for Swift concurrency: applies commits on a thread of
    /// its own until the one with origin sequence `sequence` is applied (or forever when nil),
    /// and stops when the calling task is cancelled, after the round in progress (at most 100 ms).
    public func follow(untilOriginSequence sequence: UInt64? = nil) async throws {
        // The follower is used by one thread at a time: this call's own, until it returns.
        nonisolated(unsafe) let follower = self
        try await OwnThread.run(name: "feedstore follower") { keepGoing in
            try follower.run(untilOriginSequence: sequence, while: keepGoing)
        }
    }

    /// Reads a message and checks that its commit is the one after `planned`; nil when the replica
    /// already has it.
    private func check(_ message: StreamMessage, after planned: ReplicaState?) throws -> (received: ChangeEnvelope.Received, next: ReplicaState)? {
        if let planned, message.streamSequence <= planned.streamSequence { return nil }
        let envelope = try ChangeEnvelope.decode(message.data, streamSequence: message.streamSequence)
        guard let origin = UUID(uuidString: envelope.store) else {
            throw JetStreamError.badEnvelope(streamSequence: message.streamSequence, reason: "store \(envelope.store) is not a UUID")
        }
        let expected = (planned?.originSequence ?? 0) + 1
        if let planned {
            guard origin == planned.origin else {
                throw JetStreamError.streamHoldsAnotherStore(stream: stream, found: envelope.store, expected: planned.origin)
            }
            if envelope.sequence < expected { return nil }
        }
        guard envelope.sequence == expected else {
            throw JetStreamError.replicaNeedsSeed(stream: stream, reason: planned == nil
                ? "the stream begins with commit \(envelope.sequence), not the origin's first; seed the replica from a copy of the origin"
                : "the replica has applied commit \(expected - 1) and the stream's next is \(envelope.sequence)")
        }
        return (envelope, ReplicaState(origin: origin, streamSequence: message.streamSequence, originSequence: envelope.sequence))
    }

    /// The changes of a commit as the replica stores them (values read from JSON take the kinds
    /// the origin's catalog gives their fields).
    private func plan(_ envelope: ChangeEnvelope.Received, next: ReplicaState) -> PlannedCommit {
        PlannedCommit(changes: envelope.entries.map { entry in
            guard entry.op != "d", var fields = entry.after else { return (entry.entity, entry.id, nil) }
            if !entry.exact, let schema = schemas[entry.entity] {
                for (name, value) in fields { fields[name] = schema.coerce(value, toField: name) }
            }
            return (entry.entity, entry.id, fields)
        }, next: next, timeText: envelope.timeText)
    }

    /// Writes the planned commits, each in a transaction of its own with the replica's state,
    /// sharing syncs; empties `group`. Each checks that the replica is where the one before left
    /// it, so a commit that fails leaves every later one unapplied.
    private func write(_ group: inout [PlannedCommit]) throws -> Int {
        guard !group.isEmpty else { return 0 }
        var before = state
        let bodies = group.map { commit -> (WriteTransaction) throws -> Void in
            let expected = before
            before = commit.next
            return { tx in
                guard try tx.replicaState() == expected else {
                    throw JetStreamError.replicaNeedsSeed(stream: self.stream, reason: "commit \(commit.next.originSequence) found the replica elsewhere than after the commit before it")
                }
                for change in commit.changes {
                    if let fields = change.fields {
                        // The origin kept these fields; the replica keeps what the origin has.
                        try tx.put(entity: change.entity, id: change.id, fields: fields, keepingUndeclaredFields: true)
                    } else {
                        _ = try tx.delete(entity: change.entity, id: change.id)
                    }
                }
                try tx.setReplicaState(commit.next)
            }
        }
        let outcomes = try replica.writeEach(bodies)
        defer { group.removeAll(keepingCapacity: true) }
        for (outcome, commit) in zip(outcomes, group) {
            try outcome.get()
            state = commit.next
        }
        if let text = group.last?.timeText, let time = ChangeEnvelope.timeFormatter.date(from: text) { appliedCommitTime = time }
        return group.count
    }

    /// Declares entities whose catalog entries the replica lacks or has otherwise.
    private func declare(_ received: [String: CatalogEntity]) throws {
        guard !received.isEmpty else { return }
        let catalog = try replica.catalog
        for (name, entity) in received {
            schemas[name] = entity
            let current = catalog.entities[name]
            if current?.primaryKeyKind == entity.primaryKeyKind, current?.indexes.map(\.definition) == entity.indexes.map(\.definition),
               current?.declaredFields == entity.declaredFields, current?.declaredKinds == entity.declaredKinds { continue }
            // The origin's declared fields and kinds come along, so that the replica holds what
            // it applies to what the origin's types read.
            try replica.declare(like: entity)
        }
    }
}
