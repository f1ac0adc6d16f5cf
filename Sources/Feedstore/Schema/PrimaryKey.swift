import Foundation

/// A type that can be an entity's primary key: `Int64`, `UInt64`, `Int`, `String` or `UUID`.
public protocol PrimaryKey: Hashable, Sendable, Codable {
    /// The key as a stored value.
    var fieldValue: FieldValue { get }
    /// The key from a stored value, or nil when the value has another kind.
    init?(fieldValue: FieldValue)
    /// The ``FieldValue`` kind keys of this type are stored as (recorded in the catalog, so
    /// tools can parse ids given on a command line).
    static var fieldKind: String { get }
}

extension Int64: PrimaryKey {
    /// Stored as `int`.
    public static var fieldKind: String { "int" }
    /// The key as a stored value.
    public var fieldValue: FieldValue { .int(self) }
    /// The key from a stored value, or nil when the value has another kind.
    public init?(fieldValue: FieldValue) {
        switch fieldValue {
        case let .int(v): self = v
        case let .uint(v): guard let v = Int64(exactly: v) else { return nil }; self = v
        default: return nil
        }
    }
}

extension Int: PrimaryKey {
    /// Stored as `int`.
    public static var fieldKind: String { "int" }
    /// The key as a stored value.
    public var fieldValue: FieldValue { .int(Int64(self)) }
    /// The key from a stored value, or nil when the value has another kind.
    public init?(fieldValue: FieldValue) {
        guard let v = Int64(fieldValue: fieldValue), let i = Int(exactly: v) else { return nil }
        self = i
    }
}

extension UInt64: PrimaryKey {
    /// Stored as `uint`.
    public static var fieldKind: String { "uint" }
    /// The key as a stored value.
    public var fieldValue: FieldValue { .uint(self) }
    /// The key from a stored value, or nil when the value has another kind.
    public init?(fieldValue: FieldValue) {
        switch fieldValue {
        case let .uint(v): self = v
        case let .int(v): guard let v = UInt64(exactly: v) else { return nil }; self = v
        default: return nil
        }
    }
}

extension String: PrimaryKey {
    /// Stored as `string`.
    public static var fieldKind: String { "string" }
    /// The key as a stored value.
    public var fieldValue: FieldValue { .string(self) }
    /// The key from a stored value, or nil when the value has another kind.
    public init?(fieldValue: FieldValue) {
        guard case let .string(s) = fieldValue else { return nil }
        self = s
    }
}

extension UUID: PrimaryKey {
    /// Stored as `uuid`.
    public static var fieldKind: String { "uuid" }
    /// The key as a stored value.
    public var fieldValue: FieldValue { .uuid(self) }
    /// The key from a stored value, or nil when the value has another kind.
    public init?(fieldValue: FieldValue) {
        guard case let .uuid(u) = fieldValue else { return nil }
        self = u
    }
}
