import Foundation

extension Store {
    /// The kinds a primary key can be stored as.
    public static let primaryKeyKinds: Set<String> = ["int", "uint", "string", "uuid"]

    /// Declares an entity without a Swift type, as `Store(path:entities:options:)` declares
    /// typed ones: tools and loaders that write records by field name
    /// (``WriteTransaction/put(entity:id:fields:keepingUndeclaredFields:)``) declare the entity they fill. Its fields
    /// join the catalog as records bring them. Declaring an entity the catalog already holds
    /// with the same indexes changes nothing; with other indexes, drops and builds indexes as
    /// a typed declaration does.
    /// - Parameters:
    ///   - name: the entity's name.
    ///   - indexes: its secondary indexes, as an ``Entity`` declares them (the primary-key order,
    ///     ``IndexDefinition/primaryKeyOrder``, is the store's own).
    ///   - primaryKeyKind: one of ``primaryKeyKinds``, as ``CatalogEntity/primaryKeyKind`` names it.
    /// - Throws: ``FeedstoreError/invalidIndexDefinition(entity:index:reason:)`` for an unknown
    ///   key kind or a bad index; ``FeedstoreError/readOnly(path:reason:)`` on a read-only handle.
    public func declare(entity name: String, primaryKeyKind: String, indexes: [IndexDefinition] = []) throws {
        let existing = try catalog.entities[name]
        try declare(entity: name, primaryKeyKind: primaryKeyKind, indexes: indexes,
                    fields: existing?.declaredFields, kinds: existing?.declaredKinds, copied: false)
    }

    /// Declares an entity as another store's catalog holds it: its key kind, its indexes, and
    /// the fields and kinds its Swift type declared there, which writes by name are then held
    /// to (what `storectl load --like` and replicas do).
    /// - Throws: the errors of ``declare(entity:primaryKeyKind:indexes:)``.
    public func declare(like entity: CatalogEntity) throws {
        try declare(entity: entity.name, primaryKeyKind: entity.primaryKeyKind, indexes: entity.indexes.map(\.definition),
                    fields: entity.declaredFields, kinds: entity.declaredKinds, copied: true)
    }

    /// `copied`: the declaration is another store's catalog entry, applied whatever other
    /// handles declare (a replica follows its origin's schema).
    private func declare(entity name: String, primaryKeyKind: String, indexes: [IndexDefinition],
                         fields: [String]?, kinds: [String: String]?, copied: Bool) throws
    {
        guard Self.primaryKeyKinds.contains(primaryKeyKind) else {
            throw FeedstoreError.invalidIndexDefinition(entity: name, index: "primary key",
                                                        reason: "keys cannot be stored as \(primaryKeyKind); use one of \(Self.primaryKeyKinds.sorted().joined(separator: ", "))")
        }
        let indexes = try StoreOpener.withPrimaryKeyOrder(indexes, of: name)
        let existing = try catalog.entities[name]
        if let existing, existing.primaryKeyKind != primaryKeyKind {
            throw FeedstoreError.invalidIndexDefinition(entity: name, index: "primary key",
                                                        reason: "the store keeps \(name) keys as \(existing.primaryKeyKind), not \(primaryKeyKind)")
        }
        let declaration = StoreOpener.Declaration(name: name, primaryKeyKind: primaryKeyKind, indexes: indexes,
                                                     fields: fields, kinds: kinds)
        let own = claim.current
        try StoreOpener.register([declaration], in: core, options: StoreOptions(), readOnlyReason: readOnlyReason,
                                 checkingClaims: !copied, own: own)
        claim.withLock { claim in
            if let claim { claim.add(entity: name, indexes: indexes) } else { claim = core.registered(IndexClaim.take(in: core.path, entities: [name: indexes])) }
        }
    }
}
