/// A range of an index's order: entries whose leading components equal `prefix`, then (on the
/// components after the prefix) between `lower` and `upper`. Bounds are given in index order:
/// on a descending component, `lower` is the larger value.
///
/// ```swift
/// IndexRange.all
/// IndexRange.prefix(1)                                              // folder == 1
/// IndexRange(prefix: [1], from: .inclusive([.date(newest)]), to: .exclusive([.date(oldest)]))
/// ```
public struct IndexRange: Sendable, Hashable {
    /// One end of a range, on the components after the prefix.
    public enum Bound: Sendable, Hashable {
        /// Entries equal to the bound are in the range.
        case inclusive([FieldValue])
        /// Entries equal to the bound are not in the range.
        case exclusive([FieldValue])

        /// The bound's component values.
        public var values: [FieldValue] {
            switch self {
            case let .inclusive(v), let .exclusive(v): v
            }
        }

        /// Whether entries equal to the bound are in the range.
        public var isInclusive: Bool { if case .inclusive = self { true } else { false } }
    }

    /// Values the leading components must equal.
    public var prefix: [FieldValue]
    /// The start of the range in index order (nil: from the first entry).
    public var lower: Bound?
    /// The end of the range in index order (nil: to the last entry).
    public var upper: Bound?

    /// A range of entries with `prefix`, between `lower` and `upper`.
    public init(prefix: [FieldValue] = [], from lower: Bound? = nil, to upper: Bound? = nil) {
        self.prefix = prefix
        self.lower = lower
        self.upper = upper
    }

    /// Every entry.
    public static let all = IndexRange()

    /// Entries whose leading components equal `values`.
    public static func prefix(_ values: FieldValue...) -> IndexRange { IndexRange(prefix: values) }

    /// Entries whose leading components equal Swift values: `.prefix(folder)` for an `Int64`
    /// folder, converted as records are written (``FieldValueConvertible``).
    public static func prefix<each V: FieldValueConvertible>(_ values: repeat each V) -> IndexRange {
        var prefix: [FieldValue] = []
        for value in repeat each values { prefix.append(value.fieldValue) }
        return IndexRange(prefix: prefix)
    }
}

/// A range resolved to encoded keys: `lower` inclusive, `upper` exclusive, nil for unbounded.
struct KeyRange: Sendable, Equatable {
    var lower: [UInt8]?
    var upper: [UInt8]?
    /// True when no key can be in the range (e.g. an exclusive bound past every key).
    var isEmpty = false

    static let all = KeyRange(lower: nil, upper: nil)

    func contains(_ key: [UInt8]) -> Bool { key.withUnsafeBytes { contains($0) } }

    func contains(_ key: UnsafeRawBufferPointer) -> Bool {
        if isEmpty { return false }
        if let lower, key.compare(with: lower) < 0 { return false }
        if let upper, key.compare(with: upper) >= 0 { return false }
        return true
    }

    /// Resolves `range` for keys made of components with the given directions.
    /// - Throws: ``FeedstoreError/invalidRange(entity:index:reason:)`` for too many components,
    ///   values that cannot be key components, or a lower bound above the upper bound.
    static func resolve(_ range: IndexRange, descending: [Bool], entity: String, index: String) throws -> KeyRange {
        func invalid(_ reason: String) -> FeedstoreError { .invalidRange(entity: entity, index: index, reason: reason) }
        func encode(_ values: [FieldValue], from offset: Int) throws -> [UInt8] {
            do { return try KeyEncoding.encode(values, descending: descending, offset: offset) } catch {
                throw invalid("an array or object cannot be a key component")
            }
        }
        let count = descending.count
        guard range.prefix.count <= count else {
            throw invalid("the prefix has \(range.prefix.count) components; the index has \(count)")
        }
        for bound in [range.lower, range.upper].compactMap({ $0 }) where range.prefix.count + bound.values.count > count {
            throw invalid("prefix and bound have \(range.prefix.count + bound.values.count) components; the index has \(count)")
        }
        let prefix = try encode(range.prefix, from: 0)
        var result = KeyRange(lower: prefix.isEmpty ? nil : prefix,
                              upper: prefix.isEmpty ? nil : KeyEncoding.successor(ofPrefix: prefix))
        if let lower = range.lower {
            let bytes = prefix + (try encode(lower.values, from: range.prefix.count))
            if lower.isInclusive {
                result.lower = bytes
            } else if let next = KeyEncoding.successor(ofPrefix: bytes) {
                result.lower = next
            } else {
                result.isEmpty = true
            }
        }
        if let upper = range.upper {
            let bytes = prefix + (try encode(upper.values, from: range.prefix.count))
            result.upper = upper.isInclusive ? KeyEncoding.successor(ofPrefix: bytes) : bytes
        }
        if let lower = range.lower, let upper = range.upper {
            // Only a lower bound strictly above the upper one (on the components both name) is a
            // mistake; equal exclusive bounds are simply an empty range, as in SQL.
            let shared = min(lower.values.count, upper.values.count)
            let l = try encode(Array(lower.values.prefix(shared)), from: range.prefix.count)
            let u = try encode(Array(upper.values.prefix(shared)), from: range.prefix.count)
            if u.sortsBefore(l) { throw invalid("the lower bound is above the upper bound") }
        }
        if let l = result.lower, let u = result.upper, !l.sortsBefore(u) { result.isEmpty = true }
        return result
    }
}
