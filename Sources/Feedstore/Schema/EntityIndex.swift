/// A secondary index declared with key paths, whose type knows its components' types: queries
/// on it take Swift values of those types (``Query/init(_:prefix:reverse:)``), and a value of
/// another type does not compile.
///
/// ```swift
/// struct Message: Entity {
///     var id: UInt64
///     var folder: Int64
///     var date: Date
///     var isRead: Bool
///
///     static let byFolderDate = index(\.folder, \.date.descending)
///     static let unreadByDate = index("unreadByDate", \.date.descending, where: \.isRead == false)
///     static let indexes = [byFolderDate.definition, unreadByDate.definition]
/// }
/// ```
///
/// The store keeps the ``definition``: field names, as a declaration by name would give them,
/// so the catalog, `storectl`, replicas and the network protocol see no difference.
public struct EntityIndex<Root: Entity, each Key: IndexKeyPart>: Sendable {
    /// The definition, boxed: a query copies the handle, and a box copies with one retain.
    @usableFromInline
    final class Storage: Sendable {
        let definition: IndexDefinition
        @usableFromInline let name: String

        init(_ definition: IndexDefinition) {
            self.definition = definition
            name = definition.name
        }
    }

    @usableFromInline
    let storage: Storage

    /// The index as the store keeps it.
    public var definition: IndexDefinition { storage.definition }

    /// The index's name.
    @inlinable
    public var name: String { storage.name }

    fileprivate init(name: String?, components: [(keyPath: PartialKeyPath<Root>, descending: Bool)], unique: Bool,
                     condition: IndexPredicate<Root>?)
    {
        var problem: KeyPathFields.Problem?
        let fields = components.map { component -> IndexDefinition.Component in
            switch KeyPathFields.field(of: component.keyPath) {
            case let .success(field):
                return IndexDefinition.Component(field: field, descending: component.descending)
            case let .failure(failure):
                problem = problem ?? failure
                return IndexDefinition.Component(field: failure.keyPath, descending: component.descending)
            }
        }
        var definition = IndexDefinition(name ?? Self.name(of: fields), fields, unique: unique, where: condition?.condition)
        definition.keyPathProblem = problem ?? condition?.problem
        storage = Storage(definition)
    }

    /// The entity's primary-key order (``IndexDefinition/primaryKeyOrder``).
    fileprivate init(primaryKeyOrder: Void) {
        storage = Storage(.primaryKeyOrder)
    }

    /// `by` and the fields, capitalized: `byFolderDate`, `byAddressCity`. A component whose key
    /// path maps to no field holds the key path's text (`\Ticket.kind`), named by its members.
    private static func name(of components: [IndexDefinition.Component]) -> String {
        let fields = components.map { $0.field.hasPrefix("\\") ? String($0.field.drop { $0 != "." }.dropFirst()) : $0.field }
        return "by" + fields.flatMap { $0.split(separator: ".") }.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}

extension Entity {
    /// The entity's records in primary-key order, which every entity has without declaring an
    /// index (``IndexDefinition/primaryKeyOrder``): `Query(Contact.primaryKeyOrder)`.
    public static var primaryKeyOrder: EntityIndex<Self> { EntityIndex(primaryKeyOrder: ()) }

    /// An index on the fields the key paths read, most significant first; `\.date.descending`
    /// reads a field in descending order. Named `by` and its fields (`byFolderDate`).
    ///
    /// A key path that reads no stored field (a computed property) makes the store refuse to
    /// open, naming it (``FeedstoreError/unknownKeyPath(entity:keyPath:usedBy:reason:)``).
    public static func index<each Key: IndexKeyPart>(_ keys: repeat KeyPath<Self, each Key>, unique: Bool = false,
                                                     where condition: IndexPredicate<Self>? = nil) -> EntityIndex<Self, repeat each Key>
    {
        EntityIndex(name: nil, components: components(repeat each keys), unique: unique, condition: condition)
    }

    /// An index named `name` on the fields the key paths read; see ``index(_:unique:where:)``.
    public static func index<each Key: IndexKeyPart>(_ name: String, _ keys: repeat KeyPath<Self, each Key>, unique: Bool = false,
                                                     where condition: IndexPredicate<Self>? = nil) -> EntityIndex<Self, repeat each Key>
    {
        EntityIndex(name: name, components: components(repeat each keys), unique: unique, condition: condition)
    }

    // A key path to a value that is not FieldValueConvertible matches neither declaration
    // above, and the compiler then fails on the parameter pack with no useful diagnostic
    // ("failed to produce diagnostic for expression"). These match any key path, lose to the
    // declarations above wherever those apply, and say what to do where they do not.

    @_disfavoredOverload
    @available(*, unavailable, message: "every key path of an index must read a FieldValueConvertible value (a stored kind, an Optional of one, or an enum declared `FieldValueConvertible, CaseIterable` with String or integer raw values)")
    public static func index<each Key>(_ keys: repeat KeyPath<Self, each Key>, unique: Bool = false,
                                       where condition: IndexPredicate<Self>? = nil) -> EntityIndex<Self>
    {
        fatalError("unavailable")
    }

    @_disfavoredOverload
    @available(*, unavailable, message: "every key path of an index must read a FieldValueConvertible value (a stored kind, an Optional of one, or an enum declared `FieldValueConvertible, CaseIterable` with String or integer raw values)")
    public static func index<each Key>(_ name: String, _ keys: repeat KeyPath<Self, each Key>, unique: Bool = false,
                                       where condition: IndexPredicate<Self>? = nil) -> EntityIndex<Self>
    {
        fatalError("unavailable")
    }

    private static func components<each Key: IndexKeyPart>(_ keys: repeat KeyPath<Self, each Key>)
        -> [(keyPath: PartialKeyPath<Self>, descending: Bool)]
    {
        var components: [(keyPath: PartialKeyPath<Self>, descending: Bool)] = []
        for component in repeat component(each keys) { components.append(component) }
        return components
    }

    private static func component<K: IndexKeyPart>(_ keyPath: KeyPath<Self, K>) -> (keyPath: PartialKeyPath<Self>, descending: Bool) {
        (keyPath, K.isDescending)
    }
}
