import Foundation

/// Errors of shipping a journal to JetStream and following it. Messages never include
/// credentials.
public enum JetStreamError: Error, Sendable, Equatable, CustomStringConvertible {
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

    /// Whether the error may pass once the server is reachable again (a timeout, a server that
    /// is down or restarting), as opposed to a refusal that retrying cannot change.
    public var isTransient: Bool {
        switch self {
        case .timedOut, .serverUnavailable: true
        default: false
        }
    }

    public var description: String {
        switch self {
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
            "the replica cannot continue from stream \(stream): \(reason); seed it again from a copy of the origin (storectl compact)"
        case let .badEnvelope(sequence, reason): "message \(sequence) of the stream is not a change envelope: \(reason)"
        case let .commitWithoutRecord(sequence):
            "commit \(sequence) was made before the store kept records in its journal; seed replicas from a copy taken after it"
        }
    }
}

extension JetStreamError: LocalizedError {
    /// The same one-line message as ``description``, for `localizedDescription` and alerts.
    public var errorDescription: String? { description }
}
