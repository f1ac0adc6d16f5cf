import Foundation

/// A type that can be an entity's primary key: `Int64`, `UInt64`, `Int`, `String` or `UUID`.
public protocol PrimaryKey: Hashable, Sendable, Codable {
    /// The key as a stored value.
    var fieldValue: FieldValue { get }
    /// The key from a stored value, or nil when the value has another kind.
    init?(fieldValue: FieldValue)
}

extension Int64: PrimaryKey {
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
    /// The key as a stored value.
    public var fieldValue: FieldValue { .int(Int64(self)) }
    /// The key from a stored value, or nil when the value has another kind.
    public init?(fieldValue: FieldValue) {
        guard let v = Int64(fieldValue: fieldValue), let i = Int(exactly: v) else { return nil }
        self = i
    }
}

extension UInt64: PrimaryKey {
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
    /// The key as a stored value.
    public var fieldValue: FieldValue { .string(self) }
    /// The key from a stored value, or nil when the value has another kind.
    public init?(fieldValue: FieldValue) {
        guard case let .string(s) = fieldValue else { return nil }
        self = s
    }
}

extension UUID: PrimaryKey {
    /// The key as a stored value.
    public var fieldValue: FieldValue { .uuid(self) }
    /// The key from a stored value, or nil when the value has another kind.
    public init?(fieldValue: FieldValue) {
        guard case let .uuid(u) = fieldValue else { return nil }
        self = u
    }
}
