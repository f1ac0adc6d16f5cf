import Foundation

extension Store {
    /// The kinds a primary key can be stored as.
    public static let primaryKeyKinds: Set<String> = ["int", "uint", "string", "uuid"]

    /// Declares an entity without a Swift type, as `Store(path:entities:options:)` declares
    /// typed ones: tools and loaders that write records by field name
    /// (``WriteTransaction/put(entity:id:fields:)``) declare the entity they fill. Its fields
    /// join the catalog as records bring them. Declaring an entity the catalog already holds
    /// with the same indexes changes nothing; with other indexes, drops and builds indexes as
    /// a typed declaration does.
    /// - Parameters:
    ///   - name: the entity's name.
    ///   - indexes: its secondary indexes, as an ``Entity`` declares them.
    ///   - primaryKeyKind: one of ``primaryKeyKinds``, as ``CatalogEntity/primaryKeyKind`` names it.
    /// - Throws: ``FeedstoreError/invalidIndexDefinition(entity:index:reason:)`` for an unknown
    ///   key kind or a bad index; ``FeedstoreError/readOnly(path:reason:)`` on a read-only handle.
    public func declare(entity name: String, primaryKeyKind: String, indexes: [IndexDefinition] = []) throws {
        guard Self.primaryKeyKinds.contains(primaryKeyKind) else {
            throw FeedstoreError.invalidIndexDefinition(entity: name, index: "primary key",
                                                        reason: "keys cannot be stored as \(primaryKeyKind); use one of \(Self.primaryKeyKinds.sorted().joined(separator: ", "))")
        }
        try StoreOpener.checkIndexes(indexes, of: name)
        let existing = try catalog.entities[name]
        if let existing, existing.primaryKeyKind != primaryKeyKind {
            throw FeedstoreError.invalidIndexDefinition(entity: name, index: "primary key",
                                                        reason: "the store keeps \(name) keys as \(existing.primaryKeyKind), not \(primaryKeyKind)")
        }
        let declaration = StoreOpener.Declaration(name: name, primaryKeyKind: primaryKeyKind, indexes: indexes,
                                                     fields: existing?.declaredFields)
        try StoreOpener.register([declaration], in: core, options: StoreOptions(), readOnlyReason: readOnlyReason)
    }
}
