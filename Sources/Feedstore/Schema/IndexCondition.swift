/// A condition on a record's fields: the membership condition of a partial index, and the filter
/// of a query. Comparisons of fields with constants, text tests (contains, prefix, suffix,
/// equality ignoring case or diacritics), membership in a list of values and null tests, joined
/// by and/or/not. It is data, not a closure, so the catalog persists it, tools evaluate it and a
/// server can check it.
///
/// Comparisons use ``FieldValue``'s total order; a missing field is `null`, the smallest value.
///
/// ```swift
/// IndexDefinition("unreadByDate", [.descending("date")], where: .field("isRead") == false)
/// IndexDefinition("urgent", ["due"], where: .field("priority") >= 3 && !(.field("done") == true))
/// let search: IndexCondition = .field("title").contains("report", caseInsensitive: true) && .field("folder").isIn([1, 2])
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

        /// Whether a value that compares as `order` with the constant (negative, zero,
        /// positive: ``FieldValue``'s order) meets the comparison.
        func accepts(_ order: Int) -> Bool {
            switch self {
            case .equal: order == 0
            case .notEqual: order != 0
            case .less: order < 0
            case .lessOrEqual: order <= 0
            case .greater: order > 0
            case .greaterOrEqual: order >= 0
            }
        }
    }

    /// A field compared with a constant.
    case compare(field: String, Comparison, FieldValue)
    /// Every condition holds.
    case and([IndexCondition])
    /// At least one condition holds.
    case or([IndexCondition])
    /// The condition does not hold.
    case not(IndexCondition)
    /// A string field passes a text test; other values never do.
    case text(field: String, TextTest)
    /// The field equals one of the values.
    case oneOf(field: String, [FieldValue])
    /// The field is missing or null.
    case isNull(field: String)
    /// A word of one of the string fields passes a word test (see <doc:SearchingByWords>); a text
    /// index over the same fields answers it without reading records.
    case words(fields: [String], WordTest)

    /// A field to compare: `.field("isRead") == false`.
    public static func field(_ name: String) -> FieldReference { FieldReference(name: name) }

    /// Evaluates the condition, reading fields through `value(of:)`.
    public func holds(_ value: (String) -> FieldValue) -> Bool {
        switch self {
        case let .compare(field, comparison, constant):
            return comparison.accepts(FieldValue.compare(value(field), constant))
        case let .and(parts): return parts.allSatisfy { $0.holds(value) }
        case let .or(parts): return parts.contains { $0.holds(value) }
        case let .not(inner): return !inner.holds(value)
        case let .text(field, test): return test.holds(for: value(field))
        case let .oneOf(field, values):
            let v = value(field)
            return values.contains { FieldValue.compare(v, $0) == 0 }
        case let .isNull(field): return value(field) == .null
        case let .words(fields, test):
            let matcher = WordMatcher(test)
            return fields.contains { field in
                guard case let .string(text) = value(field) else { return false }
                return matcher.matches(text)
            }
        }
    }

    /// The condition without what `implied` (which the rows already meet: a partial index's
    /// condition) makes redundant; nil when nothing is left to test.
    func removing(_ implied: IndexCondition?) -> IndexCondition? {
        guard let implied else { return self }
        if self == implied { return nil }
        guard case let .and(parts) = self else { return self }
        let rest = parts.compactMap { $0.removing(implied) }
        switch rest.count {
        case 0: return nil
        case 1: return rest[0]
        default: return .and(rest)
        }
    }

    /// How many field tests the condition makes (its size, which bounds what testing a record costs).
    public var testCount: Int {
        switch self {
        case .compare, .text, .oneOf, .isNull, .words: 1
        case let .and(parts), let .or(parts): parts.reduce(0) { $0 + $1.testCount }
        case let .not(inner): inner.testCount
        }
    }

    /// Every field the condition reads.
    public var fields: Set<String> {
        switch self {
        case let .compare(field, _, _), let .text(field, _), let .oneOf(field, _), let .isNull(field): [field]
        case let .words(fields, _): Set(fields)
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

    /// The field's text passes `test`.
    public func matches(_ test: TextTest) -> IndexCondition { .text(field: name, test) }
    /// The field's text contains `text`.
    public func contains(_ text: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false) -> IndexCondition {
        .text(field: name, .contains(text, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive))
    }
    /// The field's text starts with `text`.
    public func hasPrefix(_ text: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false) -> IndexCondition {
        .text(field: name, .hasPrefix(text, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive))
    }
    /// The field equals one of `values`.
    public func isIn(_ values: [FieldValue]) -> IndexCondition { .oneOf(field: name, values) }
    /// The field is missing or null.
    public var isNull: IndexCondition { .isNull(field: name) }
    /// One of the field's words is `word` (folded: case and diacritics ignored).
    public func hasWord(_ word: String) -> IndexCondition { .words(fields: [name], WordTest(.equals, word)) }
    /// One of the field's words starts with `prefix` (folded).
    public func hasWord(startingWith prefix: String) -> IndexCondition { .words(fields: [name], WordTest(.hasPrefix, prefix)) }
}
