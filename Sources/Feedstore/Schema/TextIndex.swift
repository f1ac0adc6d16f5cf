/// A text index declared with key paths: the words of string fields, each word's records in
/// the index's order (see <doc:SearchingByWords>).
///
/// ```swift
/// struct Note: Entity {
///     var id: UInt64
///     var date: Date
///     var title: String
///     var body: String?
///
///     static let byText = textIndex(\.title, \.body, order: \.date.descending)
///     static let indexes = [byText.definition]
/// }
/// ```
///
/// Query it by words (``Query/init(_:word:reverse:)``, ``Query/init(_:words:lastWordIsPrefix:reverse:)``).
public struct TextIndex<Root: Entity>: Sendable {
    /// The index as the store keeps it (``IndexDefinition/text(_:fields:order:where:)``).
    public let definition: IndexDefinition

    /// The index's name.
    public var name: String { definition.name }

    /// The string fields whose words the index holds.
    public var fields: [String] { definition.words ?? [] }

    init(name: String?, fields: [PartialKeyPath<Root>], order: [(keyPath: PartialKeyPath<Root>, descending: Bool)],
         condition: IndexPredicate<Root>?)
    {
        var problem: KeyPathFields.Problem?
        func field(of keyPath: PartialKeyPath<Root>) -> String {
            switch KeyPathFields.field(of: keyPath) {
            case let .success(field): return field
            case let .failure(failure):
                problem = problem ?? failure
                return failure.keyPath
            }
        }
        let words = fields.map(field(of:))
        let components = order.map { IndexDefinition.Component(field: field(of: $0.keyPath), descending: $0.descending) }
        let indexName = name ?? "text" + words.flatMap { $0.split(separator: ".") }.map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
        var definition = IndexDefinition.text(indexName, fields: words, order: components, where: condition?.condition)
        definition.keyPathProblem = problem ?? condition?.problem
        self.definition = definition
    }
}

/// A stored text field: `String`, or `String?` (a nil has no words).
public protocol TextIndexable: FieldValueConvertible {}
extension String: TextIndexable {}
extension Optional: TextIndexable where Wrapped == String {}

extension Entity {
    /// A text index over the words of the string fields the key paths read, each word's records
    /// in `order` (then by primary key). Named `text` and its fields (`textTitleBody`).
    public static func textIndex<each Text: TextIndexable, each Key: IndexKeyPart>(
        _ fields: repeat KeyPath<Self, each Text>, order: repeat KeyPath<Self, each Key>, where condition: IndexPredicate<Self>? = nil
    ) -> TextIndex<Self> {
        textIndex(named: nil, repeat each fields, order: repeat each order, where: condition)
    }

    /// A text index named `name`; see ``textIndex(_:order:where:)``.
    public static func textIndex<each Text: TextIndexable, each Key: IndexKeyPart>(
        named name: String?, _ fields: repeat KeyPath<Self, each Text>, order: repeat KeyPath<Self, each Key>,
        where condition: IndexPredicate<Self>? = nil
    ) -> TextIndex<Self> {
        var paths: [PartialKeyPath<Self>] = []
        for path in repeat each fields { paths.append(path) }
        var components: [(keyPath: PartialKeyPath<Self>, descending: Bool)] = []
        for component in repeat orderComponent(each order) { components.append(component) }
        return TextIndex(name: name, fields: paths, order: components, condition: condition)
    }

    private static func orderComponent<K: IndexKeyPart>(_ keyPath: KeyPath<Self, K>) -> (keyPath: PartialKeyPath<Self>, descending: Bool) {
        (keyPath, K.isDescending)
    }
}

extension IndexPredicate {
    /// One of the field's words is `word` (folded: case and diacritics ignored; <doc:SearchingByWords>).
    public static func hasWord<T: TextIndexable>(_ keyPath: KeyPath<Root, T>, _ word: String) -> IndexPredicate {
        on(keyPath) { .words(fields: [$0], WordTest(.equals, word)) }
    }

    /// One of the field's words starts with `prefix` (folded).
    public static func hasWord<T: TextIndexable>(_ keyPath: KeyPath<Root, T>, startingWith prefix: String) -> IndexPredicate {
        on(keyPath) { .words(fields: [$0], WordTest(.hasPrefix, prefix)) }
    }
}
