/// The membership condition of a partial index: comparisons of fields with constants, joined by
/// and/or/not. It is data, not a closure, so the catalog persists it and tools evaluate it.
///
/// Comparisons use ``FieldValue``'s total order; a missing field is `null`, the smallest value.
///
/// ```swift
/// IndexDefinition("unreadByDate", [.descending("date")], where: .field("isRead") == false)
/// IndexDefinition("urgent", ["due"], where: .field("priority") >= 3 && !(.field("done") == true))
/// ```
public indirect enum IndexCondition: Sendable, Hashable, Codable {
    /// How a field is compared with a constant.
    public enum Comparison: String, Sendable, Hashable, Codable {
        /// `==`
        case equal = "=="
        /// `!=`
        case notEqual = "!="
        /// `<`
        case less = "<"
        /// `<=`
        case lessOrEqual = "<="
        /// `>`
        case greater = ">"
        /// `>=`
        case greaterOrEqual = ">="
    }

    /// A field compared with a constant.
    case compare(field: String, Comparison, FieldValue)
    /// Every condition holds.
    case and([IndexCondition])
    /// At least one condition holds.
    case or([IndexCondition])
    /// The condition does not hold.
    case not(IndexCondition)

    /// A field to compare: `.field("isRead") == false`.
    public static func field(_ name: String) -> FieldReference { FieldReference(name: name) }

    /// Evaluates the condition, reading fields through `value(of:)`.
    public func holds(_ value: (String) -> FieldValue) -> Bool {
        switch self {
        case let .compare(field, comparison, constant):
            let c = FieldValue.compare(value(field), constant)
            switch comparison {
            case .equal: return c == 0
            case .notEqual: return c != 0
            case .less: return c < 0
            case .lessOrEqual: return c <= 0
            case .greater: return c > 0
            case .greaterOrEqual: return c >= 0
            }
        case let .and(parts): return parts.allSatisfy { $0.holds(value) }
        case let .or(parts): return parts.contains { $0.holds(value) }
        case let .not(inner): return !inner.holds(value)
        }
    }

    /// Every field the condition reads.
    public var fields: Set<String> {
        switch self {
        case let .compare(field, _, _): [field]
        case let .and(parts), let .or(parts): parts.reduce(into: []) { $0.formUnion($1.fields) }
        case let .not(inner): inner.fields
        }
    }

    /// Both conditions hold.
    public static func && (lhs: IndexCondition, rhs: IndexCondition) -> IndexCondition { .and([lhs, rhs]) }
    /// Either condition holds.
    public static func || (lhs: IndexCondition, rhs: IndexCondition) -> IndexCondition { .or([lhs, rhs]) }
    /// The condition does not hold.
    public static prefix func ! (condition: IndexCondition) -> IndexCondition { .not(condition) }
}

/// A field named in an ``IndexCondition``; compare it with a constant to make a condition.
public struct FieldReference: Sendable, Hashable {
    /// The field name (nested fields as `"a.b"`).
    public var name: String

    /// A field to compare: `.field("isRead") == false`.
    public static func field(_ name: String) -> FieldReference { FieldReference(name: name) }

    /// The field equals the constant.
    public static func == (lhs: FieldReference, rhs: FieldValue) -> IndexCondition { .compare(field: lhs.name, .equal, rhs) }
    /// The field differs from the constant.
    public static func != (lhs: FieldReference, rhs: FieldValue) -> IndexCondition { .compare(field: lhs.name, .notEqual, rhs) }
    /// The field sorts before the constant.
    public static func < (lhs: FieldReference, rhs: FieldValue) -> IndexCondition { .compare(field: lhs.name, .less, rhs) }
    /// The field sorts before or equals the constant.
    public static func <= (lhs: FieldReference, rhs: FieldValue) -> IndexCondition { .compare(field: lhs.name, .lessOrEqual, rhs) }
    /// The field sorts after the constant.
    public static func > (lhs: FieldReference, rhs: FieldValue) -> IndexCondition { .compare(field: lhs.name, .greater, rhs) }
    /// The field sorts after or equals the constant.
    public static func >= (lhs: FieldReference, rhs: FieldValue) -> IndexCondition { .compare(field: lhs.name, .greaterOrEqual, rhs) }
}
