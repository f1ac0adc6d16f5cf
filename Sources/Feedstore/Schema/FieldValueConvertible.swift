import Foundation

/// A Swift value that is stored as a ``FieldValue``: what index components, ranges and partial
/// index conditions take. Integers of every width, `Double`, `Float`, `Bool`, `String`, `Date`,
/// `UUID`, `Data`, `URL`, optionals of these and ``FieldValue`` itself conform; so does an enum
/// whose raw values conform, once it says so (`extension Priority: FieldValueConvertible {}`).
///
/// The conversion is the one records are written with: a value converts to what its field holds
/// once the record is stored (`Int32` to `.int`, `UInt8` to `.uint`, `Float` to `.double`, `URL`
/// to its absolute string).
public protocol FieldValueConvertible: IndexKeyPart, Encodable, Sendable where KeyValue == Self {
    /// The value as it is stored.
    var fieldValue: FieldValue { get }
}

/// One component of a typed index: a ``FieldValueConvertible`` field in ascending order, or
/// ``Descending`` of one. It is what a key path in ``Entity/index(_:unique:where:)`` reads.
public protocol IndexKeyPart {
    /// The type of the component's values, which ranges on it take.
    associatedtype KeyValue: FieldValueConvertible
    /// Whether larger values come first.
    static var isDescending: Bool { get }
}

extension FieldValueConvertible {
    /// Ascending.
    public static var isDescending: Bool { false }

    /// This field as a descending index component: `index(\.folder, \.date.descending)`.
    public var descending: Descending<Self> { Descending(self) }
}

/// A field read in descending order, as an index component: `\.date.descending`.
public struct Descending<Value: FieldValueConvertible>: IndexKeyPart, Encodable, Sendable {
    /// The field's value.
    public var value: Value

    /// The value, read in descending order.
    public init(_ value: Value) { self.value = value }

    public typealias KeyValue = Value
    /// Descending.
    public static var isDescending: Bool { true }

    /// Encodes as the value itself.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

extension FieldValueConvertible where Self: RawRepresentable, RawValue: FieldValueConvertible {
    /// Stored as its raw value.
    public var fieldValue: FieldValue { rawValue.fieldValue }
}

extension Optional: IndexKeyPart where Wrapped: FieldValueConvertible {
    public typealias KeyValue = Self
}

extension Optional: FieldValueConvertible where Wrapped: FieldValueConvertible {
    /// `null` for nil, otherwise the wrapped value's.
    public var fieldValue: FieldValue { self?.fieldValue ?? .null }
}

extension FieldValue: IndexKeyPart, FieldValueConvertible {
    public typealias KeyValue = FieldValue
    /// Itself.
    public var fieldValue: FieldValue { self }
}

// The primary key types (`Int64`, `Int`, `UInt64`, `String`, `UUID`) convert through
// ``PrimaryKey``'s `fieldValue`.
extension Int64: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = Int64 }
extension Int: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = Int }
extension UInt64: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = UInt64 }
extension String: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = String }
extension UUID: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = UUID }

extension FieldValueConvertible where Self: FixedWidthInteger & SignedInteger {
    /// Stored as `int`.
    public var fieldValue: FieldValue { .int(Int64(self)) }
}

extension FieldValueConvertible where Self: FixedWidthInteger & UnsignedInteger {
    /// Stored as `uint`.
    public var fieldValue: FieldValue { .uint(UInt64(self)) }
}

extension Int32: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = Int32 }
extension Int16: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = Int16 }
extension Int8: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = Int8 }
extension UInt: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = UInt }
extension UInt32: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = UInt32 }
extension UInt16: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = UInt16 }
extension UInt8: IndexKeyPart, FieldValueConvertible { public typealias KeyValue = UInt8 }

extension Double: IndexKeyPart, FieldValueConvertible {
    public typealias KeyValue = Double
    /// Stored as `double`.
    public var fieldValue: FieldValue { .double(self) }
}

extension Float: IndexKeyPart, FieldValueConvertible {
    public typealias KeyValue = Float
    /// Stored as `double`.
    public var fieldValue: FieldValue { .double(Double(self)) }
}

extension Bool: IndexKeyPart, FieldValueConvertible {
    public typealias KeyValue = Bool
    /// Stored as `bool`.
    public var fieldValue: FieldValue { .bool(self) }
}

extension Date: IndexKeyPart, FieldValueConvertible {
    public typealias KeyValue = Date
    /// Stored as `date`.
    public var fieldValue: FieldValue { .date(self) }
}

extension Data: IndexKeyPart, FieldValueConvertible {
    public typealias KeyValue = Data
    /// Stored as `bytes`.
    public var fieldValue: FieldValue { .bytes([UInt8](self)) }
}

extension URL: IndexKeyPart, FieldValueConvertible {
    public typealias KeyValue = URL
    /// Stored as `string`: the absolute string.
    public var fieldValue: FieldValue { .string(absoluteString) }
}

extension FieldValue {
    /// The stored form of a Swift value: `FieldValue(folder)` for an `Int64` folder.
    public init(_ value: some FieldValueConvertible) { self = value.fieldValue }
}
