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
    /// For a text index (``text(_:fields:order:where:)``), the string fields whose words it holds;
    /// nil for an index of field values.
    public var words: [String]?

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
        case name, components, unique, condition, words
    }
}

extension IndexDefinition {
    /// The first component of a text index's entries: one of the record's words (folded), which
    /// no field supplies. Its other components are the order of each word's list.
    public static let wordComponent = "#word"

    /// A text index: for every record, one entry per distinct word of `fields` (split and folded
    /// as <doc:SearchingByWords> says), whose key is the word, then the `order` components, then the
    /// primary key; and one entry under the empty word, which lists every record in that order.
    /// A one-word query is then the range of that word, counted like any index range.
    public static func text(_ name: String, fields: [String], order: [Component], where condition: IndexCondition? = nil) -> IndexDefinition {
        var definition = IndexDefinition(name, [Component(field: wordComponent)] + order, where: condition)
        definition.words = fields
        return definition
    }

    /// Whether this is a text index.
    public var isText: Bool { words != nil }

    /// The fields the index reads to make its keys (components and words, not its condition).
    var keyFields: [String] {
        components.map(\.field).filter { $0 != Self.wordComponent } + (words ?? [])
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
