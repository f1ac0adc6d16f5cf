/// A secondary index: ordered components (fields, each ascending or descending), optionally unique,
/// optionally partial (only records matching a condition are members). Ties between equal
/// component values are broken by primary key, so the order is total and stable.
///
/// The definition is persisted in the catalog; opening a store with a changed definition rebuilds
/// the index rather than letting it disagree with its declaration.
public struct IndexDefinition: Sendable, Hashable, Codable {
    /// One component: a field name (nested fields as `"address.city"`) and its direction.
    public struct Component: Sendable, Hashable, Codable, ExpressibleByStringLiteral {
        /// The field name (nested fields as `"a.b"`).
        public var field: String
        /// Whether larger values come first.
        public var descending: Bool

        /// A component on `field`, ascending unless `descending`.
        public init(field: String, descending: Bool = false) {
            self.field = field
            self.descending = descending
        }

        /// An ascending component: `["name"]`.
        public init(stringLiteral field: String) { self.init(field: field) }

        /// An ascending component.
        public static func ascending(_ field: String) -> Component { Component(field: field) }
        /// A descending component.
        public static func descending(_ field: String) -> Component { Component(field: field, descending: true) }
    }

    /// The index name, unique within its entity.
    public var name: String
    /// The components, most significant first.
    public var components: [Component]
    /// When true, no two members may share all component values (members with a nil component
    /// are exempt, as in SQL).
    public var unique: Bool
    /// When set, only records for which the condition holds are in the index.
    public var condition: IndexCondition?

    /// A key path of a typed declaration (``Entity/index(_:unique:where:)``) that reads no
    /// stored field: the store refuses to open with it, naming it. Not persisted.
    var keyPathProblem: KeyPathFields.Problem?

    /// Declares an index; see the type's description.
    public init(_ name: String, _ components: [Component], unique: Bool = false, where condition: IndexCondition? = nil) {
        self.name = name
        self.components = components
        self.unique = unique
        self.condition = condition
    }

    private enum CodingKeys: String, CodingKey {
        case name, components, unique, condition
    }
}

extension IndexDefinition {
    /// The name of the index every entity has without declaring it: ``primaryKeyOrder``.
    public static let primaryKeyOrderName = "id"

    /// Every entity's records in the order of their primary keys, counted as every index is, so
    /// that an entity with no declared index can be counted, windowed and watched
    /// (`Query(Contact.self, index: "id")`). It has no components: its entries are the primary
    /// keys alone. The store keeps it for every entity; a declared index cannot take its name.
    public static let primaryKeyOrder = IndexDefinition(primaryKeyOrderName, [])
}
