import Feedstore

/// A refusal the server sends as an `error` frame: a code a client can switch on, and a message
/// that names what is wrong. The connection stays open.
public struct LiveError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of refusal.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// Not JSON, not an object, or a member missing or of the wrong type.
        case malformed
        /// A `type` the protocol does not have.
        case unknownType
        /// An entity, index or field the store does not have.
        case unknownEntity, unknownIndex, unknownField
        /// A range the index cannot take: a component of the wrong kind, too many components,
        /// bounds the wrong way round.
        case invalidRange
        /// A filter the records cannot be tested by: a constant of the wrong kind for its field,
        /// a text test on a field that is not text.
        case invalidFilter
        /// The authorizer refused the query.
        case refused
        /// A limit of the connection: subscriptions, window size, frame size.
        case limitExceeded
        /// Window moves came faster than the connection allows.
        case rateLimited
        /// A subscription id that is not open, or one that already is.
        case unknownSubscription, duplicateSubscription
        /// A `rows` request on a subscription in objects mode.
        case wrongMode
        /// The store failed (it was closed, or a file is damaged).
        case storeFailed
    }

    public var code: Code
    public var message: String
    /// The subscription the error concerns, if any.
    public var id: FieldValue?

    public init(_ code: Code, _ message: String, id: FieldValue? = nil) {
        self.code = code
        self.message = message
        self.id = id
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// The refusal for a store error met while opening or running a subscription: a code, and
    /// a message written for clients, the same whatever the error says (which can name files and
    /// internals; the session logs it).
    static func from(_ error: any Error, id: FieldValue?) -> LiveError {
        switch error as? FeedstoreError {
        case .unknownEntity: LiveError(.unknownEntity, "the entity of this query is no longer in the store", id: id)
        case .unknownIndex: LiveError(.unknownIndex, "the index of this query is no longer in the store", id: id)
        case .unknownField, .unknownKeyPath: LiveError(.unknownField, "a field of this query is no longer in the store", id: id)
        case .invalidRange: LiveError(.invalidRange, "the range of this query does not fit its index", id: id)
        case .invalidFilter: LiveError(.invalidFilter, "the filter of this query does not fit the entity's fields", id: id)
        default: LiveError(.storeFailed, "the store could not answer; the server's log says why", id: id)
        }
    }
}
