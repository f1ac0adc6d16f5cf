import Foundation

/// A stored value, independent of any Swift type: what a record field, an index key component or
/// a primary key holds. Records decode to it without the application's types (this is what
/// `storectl` prints), and index keys are computed from it.
///
/// Values are totally ordered, first by kind (in case order: `null` first), then by value. That
/// order is the order of their key encoding. Doubles follow Swift's `<` except that `-0.0` equals
/// `0.0` and NaN (every NaN) sorts after `+infinity`; strings compare as Swift `String`s do
/// (canonical equivalence), so `"é"` precomposed equals `"e\u{301}"`.
public enum FieldValue: Sendable {
    /// No value: nil, or a field the record does not have. Sorts first.
    case null
    /// A Boolean; `false` sorts first.
    case bool(Bool)
    /// A signed integer (every signed Swift integer type).
    case int(Int64)
    /// An unsigned integer (every unsigned Swift integer type).
    case uint(UInt64)
    /// A `Double` or `Float`.
    case double(Double)
    /// A `Date`, ordered by time.
    case date(Date)
    /// A string (or `URL`).
    case string(String)
    /// Raw bytes (`Data`).
    case bytes([UInt8])
    /// A `UUID`, ordered by its bytes.
    case uuid(UUID)
    /// An array; not a key component.
    case array([FieldValue])
    /// A nested keyed value (a struct or dictionary); not a key component.
    case object([String: FieldValue])

    /// The position of the value's kind in the total order.
    var kindRank: Int {
        switch self {
        case .null: 0
        case .bool: 1
        case .int: 2
        case .uint: 3
        case .double: 4
        case .date: 5
        case .string: 6
        case .bytes: 7
        case .uuid: 8
        case .array: 9
        case .object: 10
        }
    }

    /// The rank of the kind named `name`, if it is one.
    static func kindRank(ofKindName name: String) -> Int? {
        kindNames.firstIndex(of: name)
    }

    private static let kindNames = ["null", "bool", "int", "uint", "double", "date", "string", "bytes", "uuid", "array", "object"]

    /// The name of the value's kind, as the catalog records field types.
    public var kindName: String { Self.kindNames[kindRank] }
}

extension FieldValue: Comparable {
    /// Whether `lhs` sorts before `rhs` in the total order.
    public static func < (lhs: FieldValue, rhs: FieldValue) -> Bool {
        compare(lhs, rhs) < 0
    }

    /// Equality in the total order: `-0.0 == 0.0`, NaN equals NaN, canonically equivalent strings are equal.
    public static func == (lhs: FieldValue, rhs: FieldValue) -> Bool {
        compare(lhs, rhs) == 0
    }

    /// Three-way comparison in the total order described on ``FieldValue``.
    static func compare(_ lhs: FieldValue, _ rhs: FieldValue) -> Int {
        switch (lhs, rhs) {
        case (.null, .null): return 0
        case let (.bool(a), .bool(b)): return a == b ? 0 : (a ? 1 : -1)
        case let (.int(a), .int(b)): return a == b ? 0 : (a < b ? -1 : 1)
        case let (.uint(a), .uint(b)): return a == b ? 0 : (a < b ? -1 : 1)
        case let (.double(a), .double(b)): return compareDoubles(a, b)
        case let (.date(a), .date(b)):
            return compareDoubles(a.timeIntervalSinceReferenceDate, b.timeIntervalSinceReferenceDate)
        case let (.string(a), .string(b)):
            let x = KeyEncoding.normalized(a).utf8, y = KeyEncoding.normalized(b).utf8
            return x.elementsEqual(y) ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
        case let (.bytes(a), .bytes(b)): return a.lexicographicallyPrecedes(b) ? -1 : (a == b ? 0 : 1)
        case let (.uuid(a), .uuid(b)): return compareBytes(a.uuid, b.uuid)
        case let (.array(a), .array(b)):
            for (x, y) in zip(a, b) {
                let c = compare(x, y)
                if c != 0 { return c }
            }
            return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
        case let (.object(a), .object(b)):
            return compare(.array(a.sorted { $0.key < $1.key }.flatMap { [.string($0.key), $0.value] }),
                           .array(b.sorted { $0.key < $1.key }.flatMap { [.string($0.key), $0.value] }))
        default:
            return lhs.kindRank < rhs.kindRank ? -1 : 1
        }
    }

    private static func compareDoubles(_ a: Double, _ b: Double) -> Int {
        switch (a.isNaN, b.isNaN) {
        case (true, true): return 0
        case (true, false): return 1
        case (false, true): return -1
        case (false, false): return a == b ? 0 : (a < b ? -1 : 1)
        }
    }

    private static func compareBytes(_ a: uuid_t, _ b: uuid_t) -> Int {
        let x = withUnsafeBytes(of: a) { Array($0) }
        let y = withUnsafeBytes(of: b) { Array($0) }
        return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
    }
}

extension FieldValue: Hashable {
    /// Hashes consistently with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(kindRank)
        switch self {
        case .null: break
        case let .bool(v): hasher.combine(v)
        case let .int(v): hasher.combine(v)
        case let .uint(v): hasher.combine(v)
        case let .double(v): hasher.combine(v.isNaN ? Double.nan.bitPattern : (v == 0 ? 0 : v.bitPattern))
        case let .date(v): hasher.combine(v.timeIntervalSinceReferenceDate)
        case let .string(v): hasher.combine(KeyEncoding.normalized(v))
        case let .bytes(v): hasher.combine(v)
        case let .uuid(v): hasher.combine(v)
        case let .array(v): hasher.combine(v)
        case let .object(v): hasher.combine(v)
        }
    }
}

extension FieldValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByNilLiteral
{
    /// An `.int` from an integer literal.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A `.string` from a string literal.
    public init(stringLiteral value: String) { self = .string(value) }
    /// A `.bool` from a Boolean literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// A `.double` from a floating-point literal.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// `.null` from `nil`.
    public init(nilLiteral: ()) { self = .null }
}

extension FieldValue: CustomStringConvertible {
    /// The value as JSON text.
    public var description: String { jsonText }
}
