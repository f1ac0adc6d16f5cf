/// A condition written with key paths: the membership condition of a typed partial index
/// (`\.isRead == false`, `\.priority >= 3 && !(\.done == true)`) and the filter of a query
/// (`.contains(\.title, "report", caseInsensitive: true) && \.isRead == false`). It becomes the
/// ``IndexCondition`` the catalog keeps or the query carries, with the fields' stored names.
///
/// Comparisons use ``FieldValue``'s total order; nil is the smallest value. Text tests follow
/// ``TextTest``'s rules.
public struct IndexPredicate<Root: Entity>: Sendable, Hashable {
    /// The condition as the store keeps it.
    public let condition: IndexCondition
    /// The first key path that reads no stored field, reported when the store opens.
    let problem: KeyPathFields.Problem?

    init(_ condition: IndexCondition, problem: KeyPathFields.Problem?) {
        self.condition = condition
        self.problem = problem
    }

    static func compare<V: FieldValueConvertible>(_ keyPath: KeyPath<Root, V>, _ comparison: IndexCondition.Comparison, _ value: V)
        -> IndexPredicate
    {
        on(keyPath) { .compare(field: $0, comparison, value.fieldValue) }
    }

    /// The condition `make` builds on the stored name of `keyPath`'s field.
    static func on(_ keyPath: PartialKeyPath<Root>, _ make: (String) -> IndexCondition) -> IndexPredicate {
        switch KeyPathFields.field(of: keyPath) {
        case let .success(field): IndexPredicate(make(field), problem: nil)
        case let .failure(problem): IndexPredicate(make(problem.keyPath), problem: problem)
        }
    }

    /// The field's text passes `test`.
    public static func matches(_ keyPath: KeyPath<Root, String>, _ test: TextTest) -> IndexPredicate {
        on(keyPath) { .text(field: $0, test) }
    }

    /// The field's text, when it has one, passes `test`.
    public static func matches(_ keyPath: KeyPath<Root, String?>, _ test: TextTest) -> IndexPredicate {
        on(keyPath) { .text(field: $0, test) }
    }

    /// The field contains `text`: `.contains(\.title, "report", caseInsensitive: true)`.
    public static func contains(_ keyPath: KeyPath<Root, String>, _ text: String, caseInsensitive: Bool = false,
                                diacriticInsensitive: Bool = false) -> IndexPredicate
    {
        matches(keyPath, .contains(text, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive))
    }

    /// The field, when it has a value, contains `text`.
    public static func contains(_ keyPath: KeyPath<Root, String?>, _ text: String, caseInsensitive: Bool = false,
                                diacriticInsensitive: Bool = false) -> IndexPredicate
    {
        matches(keyPath, .contains(text, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive))
    }

    /// The field starts with `text`.
    public static func hasPrefix(_ keyPath: KeyPath<Root, String>, _ text: String, caseInsensitive: Bool = false,
                                 diacriticInsensitive: Bool = false) -> IndexPredicate
    {
        matches(keyPath, .hasPrefix(text, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive))
    }

    /// The field, when it has a value, starts with `text`.
    public static func hasPrefix(_ keyPath: KeyPath<Root, String?>, _ text: String, caseInsensitive: Bool = false,
                                 diacriticInsensitive: Bool = false) -> IndexPredicate
    {
        matches(keyPath, .hasPrefix(text, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive))
    }

    /// The field equals one of `values`: `.isIn(\.folder, [1, 2])`.
    public static func isIn<V: FieldValueConvertible>(_ keyPath: KeyPath<Root, V>, _ values: [V]) -> IndexPredicate {
        on(keyPath) { .oneOf(field: $0, values.map(\.fieldValue)) }
    }

    /// The field is nil (or missing from the stored record).
    public static func isNull<V: FieldValueConvertible>(_ keyPath: KeyPath<Root, V?>) -> IndexPredicate {
        on(keyPath) { .isNull(field: $0) }
    }

    /// Both conditions hold.
    public static func && (lhs: IndexPredicate, rhs: IndexPredicate) -> IndexPredicate {
        IndexPredicate(lhs.condition && rhs.condition, problem: lhs.problem ?? rhs.problem)
    }

    /// Either condition holds.
    public static func || (lhs: IndexPredicate, rhs: IndexPredicate) -> IndexPredicate {
        IndexPredicate(lhs.condition || rhs.condition, problem: lhs.problem ?? rhs.problem)
    }

    /// The condition does not hold.
    public static prefix func ! (predicate: IndexPredicate) -> IndexPredicate {
        IndexPredicate(!predicate.condition, problem: predicate.problem)
    }
}

/// The field equals the value.
public func == <Root: Entity, V: FieldValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> IndexPredicate<Root> {
    .compare(lhs, .equal, rhs)
}

/// The field differs from the value.
public func != <Root: Entity, V: FieldValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> IndexPredicate<Root> {
    .compare(lhs, .notEqual, rhs)
}

/// The field sorts before the value.
public func < <Root: Entity, V: FieldValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> IndexPredicate<Root> {
    .compare(lhs, .less, rhs)
}

/// The field sorts before or equals the value.
public func <= <Root: Entity, V: FieldValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> IndexPredicate<Root> {
    .compare(lhs, .lessOrEqual, rhs)
}

/// The field sorts after the value.
public func > <Root: Entity, V: FieldValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> IndexPredicate<Root> {
    .compare(lhs, .greater, rhs)
}

/// The field sorts after or equals the value.
public func >= <Root: Entity, V: FieldValueConvertible>(lhs: KeyPath<Root, V>, rhs: V) -> IndexPredicate<Root> {
    .compare(lhs, .greaterOrEqual, rhs)
}
