/// The membership condition of a typed partial index, written with key paths:
/// `\.isRead == false`, `\.priority >= 3 && !(\.done == true)`. It becomes the
/// ``IndexCondition`` the catalog keeps, with the fields' stored names.
///
/// Comparisons use ``FieldValue``'s total order; nil is the smallest value.
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
        switch KeyPathFields.field(of: keyPath) {
        case let .success(field): IndexPredicate(.compare(field: field, comparison, value.fieldValue), problem: nil)
        case let .failure(problem): IndexPredicate(.compare(field: problem.keyPath, comparison, value.fieldValue), problem: problem)
        }
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
