import Feedstore

/// What a principal may watch: an entity (every entity when nil), one of its indexes, and the
/// leading components a query's prefix must begin with, in the kinds the catalog stores.
public struct LiveGrant: Sendable, Hashable {
    public var entity: String?
    public var index: String?
    public var prefix: [FieldValue]

    public init(entity: String?, index: String? = nil, prefix: [FieldValue] = []) {
        self.entity = entity
        self.index = index
        self.prefix = prefix
    }

    /// Whether the grant covers `query` (whose components the session has converted): the same
    /// entity and index, and a prefix that begins with the grant's. A range reaching the same
    /// rows without that prefix is not covered.
    public func admits(_ query: LiveQuery) -> Bool {
        guard let entity else { return true }
        guard query.entity == entity else { return false }
        guard let index else { return true }
        return query.index == index && query.prefix.count >= prefix.count && Array(query.prefix.prefix(prefix.count)) == prefix
    }
}

/// Bearer tokens and what each may watch, read from a JSON file such as
///
/// ```json
/// {
///   "token-of-user-7": [{"entity": "Message", "index": "byContact", "prefix": [7]}],
///   "token-of-the-admin": [{"entity": "*"}]
/// }
/// ```
///
/// Each grant names an entity (`"*"`: every one), optionally an index, and with it optionally a
/// prefix, whose components convert to the index's kinds as a `subscribe` frame's do. Names and
/// components are checked against the store's catalog when the file is read.
public struct LiveTokens: Sendable {
    public let grants: [String: [LiveGrant]]

    /// What the token may watch (nothing for an unknown token).
    public func grants(for token: String) -> [LiveGrant]? { grants[token] }

    /// Whether `token` may watch `query`.
    public func admits(_ token: String, _ query: LiveQuery) -> Bool {
        grants[token]?.contains { $0.admits(query) } ?? false
    }

    public init(grants: [String: [LiveGrant]]) {
        self.grants = grants
    }

    /// The tokens of `json`, checked against `catalog`; what is wrong is a ``LiveError`` naming
    /// the token (its first characters) and the member.
    public init(json: String, catalog: Catalog) throws(LiveError) {
        guard let value = try? FieldValue(jsonText: json), case let .object(tokens) = value else {
            throw LiveError(.malformed, "a tokens file is a JSON object mapping each token to a list of grants")
        }
        var grants: [String: [LiveGrant]] = [:]
        for (token, list) in tokens {
            let named = token.count > 4 ? "token \(token.prefix(4))…" : "token \(token)"
            guard !token.isEmpty else { throw LiveError(.malformed, "a token is empty") }
            guard case let .array(items) = list else { throw LiveError(.malformed, "\(named): its grants must be a list") }
            grants[token] = try items.map { item throws(LiveError) in try Self.grant(item, catalog: catalog, named: named) }
        }
        self.grants = grants
    }

    private static func grant(_ item: FieldValue, catalog: Catalog, named: String) throws(LiveError) -> LiveGrant {
        guard case let .object(members) = item, case let .string(entityName)? = members["entity"] else {
            throw LiveError(.malformed, "\(named): each grant is an object with an \"entity\" (\"*\" for every entity)")
        }
        if let other = members.keys.first(where: { !["entity", "index", "prefix"].contains($0) }) {
            throw LiveError(.malformed, "\(named): \"\(other)\" is not a member of a grant (entity, index, prefix)")
        }
        if entityName == "*" {
            guard members.count == 1 else { throw LiveError(.malformed, "\(named): a grant of every entity names no index or prefix") }
            return LiveGrant(entity: nil)
        }
        guard let entity = catalog.entities[entityName] else {
            throw LiveError(.unknownEntity, "\(named): no entity named \(entityName); the entities are \(catalog.entities.keys.sorted().joined(separator: ", "))")
        }
        guard let indexValue = members["index"] else {
            guard members["prefix"] == nil else { throw LiveError(.malformed, "\(named): a prefix needs an index") }
            return LiveGrant(entity: entityName)
        }
        guard case let .string(index) = indexValue, entity.index(named: index) != nil else {
            throw LiveError(.unknownIndex, "\(named): \(entityName) has no index named \(indexValue.jsonText); its indexes are "
                + entity.indexes.map(\.definition.name).joined(separator: ", "))
        }
        var prefix: [FieldValue] = []
        if let prefixValue = members["prefix"] {
            guard case let .array(components) = prefixValue else { throw LiveError(.malformed, "\(named): prefix must be an array of key components") }
            do {
                prefix = try entity.keyComponents(components, forIndex: index)
            } catch {
                throw LiveError(.invalidRange, "\(named): \(error)")
            }
        }
        return LiveGrant(entity: entityName, index: index, prefix: prefix)
    }
}
