import Foundation

/// Errors of shipping a journal to JetStream and following it. Messages never include
/// credentials.
public enum JetStreamError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stream's or bucket's name that JetStream does not take (`kind` says which): checked
    /// before anything is sent or written.
    case invalidName(kind: String, name: String, reason: String)
    /// A server URL that is not one (``JetStreamConnection/url``): checked before connecting.
    /// Not transient: the same URL never connects.
    case invalidURL(url: String, reason: String)
    /// The server could not be reached, or refused the connection (wrong credentials included).
    case connectionFailed(url: String, reason: String)
    /// The server did not answer in time.
    case timedOut(String)
    /// The server cannot be reached now (down, restarting, or JetStream not ready yet). A
    /// running shipper or follower waits and reconnects; at the start it is an error.
    case serverUnavailable(String, reason: String)
    /// The server refused a request.
    case serverRefused(String, reason: String)
    /// The stream holds another store's commits: each stream carries one store's journal.
    case streamHoldsAnotherStore(stream: String, found: String, expected: UUID)
    /// Another shipper published to the stream since this one read it, or one already ships
    /// this store (each store has at most one shipper).
    case anotherShipper(stream: String, reason: String)
    /// The stream holds commits this store does not have (the store was restored from an older
    /// copy, say): shipping would fork the history.
    case streamAheadOfStore(stream: String, streamSequence: UInt64, storeSequence: UInt64)
    /// The stream's last commit is not this store's commit of the same sequence: a copy of the
    /// store (same identifier) made other commits and shipped them.
    case historyDiverged(stream: String, sequence: UInt64)
    /// The store no longer keeps commits the stream lacks (a hard retention bound trimmed them).
    case storeBehindStream(stream: String, streamLast: UInt64, firstRetained: UInt64)
    /// Another follower applies the stream to this replica.
    case anotherFollower(replica: String, reason: String)
    /// The replica cannot continue from the stream: the commits it needs next are not there
    /// (never shipped, or dropped by the stream's retention). Seed it again from a copy of the
    /// origin (`storectl compact`) and follow from there.
    case replicaNeedsSeed(stream: String, reason: String)
    /// A message of the stream is not a Feedstore change envelope this library reads.
    case badEnvelope(streamSequence: UInt64, reason: String)
    /// A commit to ship lacks the record after a change: it was made before the store kept
    /// record images in its journal.
    case commitWithoutRecord(sequence: UInt64)
    /// An object of a snapshot bucket is not what its description promises (chunks missing,
    /// another size or digest), or its description is unreadable.
    case badObject(bucket: String, name: String, reason: String)
    /// The bucket holds no snapshot a replica can start from.
    case noSnapshot(bucket: String, reason: String)
    /// A replica could not be promoted.
    case promotionFailed(stream: String, reason: String)
    /// Reading or writing a local file of a snapshot failed.
    case fileFailed(reason: String)
    /// A replica was promoted in this store's place: the stream now carries another store's
    /// commits, and this store's commits after `through` never reached it. They are not merged;
    /// the store can rejoin only as a replica, seeded from a snapshot.
    case supersededByPromotion(stream: String, promoted: UUID, through: UInt64, unshipped: ClosedRange<UInt64>?)
    /// No primary answered a forwarded write (none accepts writes on the stream, or the server
    /// cannot be reached): the request was not applied.
    case primaryUnreachable(stream: String, reason: String)
    /// A forwarded write got no answer in time: it may or may not have been applied. Sending
    /// it again with the same request id is safe; it is applied at most once.
    case writeOutcomeUnknown(stream: String, request: String, reason: String)
    /// The primary answered that it did not apply a forwarded write, for a reason that is not
    /// the request's (its disk is full, say).
    case writeNotApplied(stream: String, request: String, reason: String)
    /// A forwarded write is in the stream as commit `sequence`, but the replica had applied
    /// only through `applied` when the call's time ran out (its follower is behind or stopped).
    case replicaBehind(replica: String, sequence: UInt64, applied: UInt64)

    /// Whether the replica must be seeded again (from a snapshot) to continue.
    public var needsSeed: Bool {
        if case .replicaNeedsSeed = self { return true }
        return false
    }

    /// Whether the error may pass once the server is reachable again (a timeout, a server that
    /// is down or restarting, a primary not answering yet), as opposed to a refusal that
    /// retrying cannot change.
    public var isTransient: Bool {
        switch self {
        case .timedOut, .serverUnavailable, .primaryUnreachable, .writeOutcomeUnknown: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case let .invalidName(kind, name, reason): "\"\(name)\" cannot name a JetStream \(kind): \(reason)"
        case let .invalidURL(url, reason): "\"\(url)\" is not a NATS server URL: \(reason)"
        case let .connectionFailed(url, reason): "cannot connect to NATS at \(url): \(reason)"
        case let .timedOut(what): "NATS did not answer in time: \(what)"
        case let .serverUnavailable(what, reason): "NATS is unavailable for \(what): \(reason)"
        case let .serverRefused(what, reason): "NATS refused \(what): \(reason)"
        case let .streamHoldsAnotherStore(stream, found, expected):
            "stream \(stream) holds the commits of store \(found), not of this store (\(expected.uuidString.lowercased()))"
        case let .anotherShipper(stream, reason): "another shipper writes stream \(stream): \(reason)"
        case let .streamAheadOfStore(stream, streamSequence, storeSequence):
            "stream \(stream) holds commits up to \(streamSequence), but this store's journal ends at \(storeSequence)"
        case let .historyDiverged(stream, sequence):
            "stream \(stream) holds another commit \(sequence) than this store's: a copy of the store shipped its own history"
        case let .storeBehindStream(stream, streamLast, firstRetained):
            "stream \(stream) ends at commit \(streamLast), but the store's journal now starts at \(firstRetained): the commits between were trimmed"
        case let .anotherFollower(replica, reason): "another follower writes replica \(replica): \(reason)"
        case let .replicaNeedsSeed(stream, reason):
            "the replica cannot continue from stream \(stream): \(reason); seed it again from the newest snapshot (storectl follow --reseed)"
        case let .badEnvelope(sequence, reason): "message \(sequence) of the stream is not a change envelope: \(reason)"
        case let .badObject(bucket, name, reason): "object \(name) of bucket \(bucket) is damaged: \(reason)"
        case let .noSnapshot(bucket, reason): "bucket \(bucket) holds no snapshot to start a replica from: \(reason)"
        case let .promotionFailed(stream, reason): "cannot promote the replica on stream \(stream): \(reason)"
        case let .fileFailed(reason): "a snapshot file failed: \(reason)"
        case let .supersededByPromotion(stream, promoted, through, unshipped):
            "another store now ships to stream \(stream): store \(promoted.uuidString.lowercased()) was promoted after this store's commit \(through); "
                + (unshipped.map { "this store's \($0.count) commits \($0.lowerBound)–\($0.upperBound) never reached the stream and are not merged; " }
                    ?? "every commit of this store reached the stream; ")
                + "rejoin as a replica from a snapshot (storectl follow --reseed)"
        case let .primaryUnreachable(stream, reason):
            "no primary of stream \(stream) answered the write (\(reason)); it was not applied"
        case let .writeOutcomeUnknown(stream, request, reason):
            "the primary of stream \(stream) did not answer write request \(request) in time (\(reason)); it may have been applied: send it again with the same request id, which applies it at most once"
        case let .writeNotApplied(stream, request, reason):
            "the primary of stream \(stream) did not apply write request \(request): \(reason)"
        case let .replicaBehind(replica, sequence, applied):
            "the write is commit \(sequence), but replica \(replica) had applied only through commit \(applied) when the time ran out; is its follower running?"
        case let .commitWithoutRecord(sequence):
            "commit \(sequence) was made before the store kept records in its journal; seed replicas from a copy taken after it"
        }
    }
}

extension JetStreamError: LocalizedError {
    /// The same one-line message as ``description``, for `localizedDescription` and alerts.
    public var errorDescription: String? { description }
}
