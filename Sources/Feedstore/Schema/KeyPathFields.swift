import Foundation

/// The stored field a key path reads, found without asking the type to name its fields twice:
/// the type's `Decodable` conformance makes a base value and, per field, a variant that differs
/// from it in that field alone (``DeclaredFields/prototypes(of:)``). A key path reads field `f`
/// when its value changes in exactly `f`'s variants (and its members'), and equals what a stored
/// record holds at `f` in every prototype. A computed property fails the second test even when
/// it is made from one field (`!isRead` is not `isRead`).
///
/// Each type's prototypes are made once, and each key path is resolved once per process.
enum KeyPathFields {
    /// What a key path could not be resolved to, kept until a store or a watcher reports it.
    struct Problem: Error, Sendable, Hashable {
        /// The key path as Swift describes it (`\Message.isUnread`, or the property's offset
        /// where the platform keeps no names).
        var keyPath: String
        var reason: String

        /// The error to throw where the key path is used.
        func error(entity: String, usedBy: String) -> FeedstoreError {
            .unknownKeyPath(entity: entity, keyPath: keyPath, usedBy: usedBy, reason: reason)
        }
    }

    /// The dotted name of the stored field `keyPath` reads (`"address.city"`), or why it reads
    /// none.
    static func field<Root: Decodable>(of keyPath: PartialKeyPath<Root>) -> Result<String, Problem> {
        let table = lock.withLock { () -> TypeTable<Root>? in
            tables[ObjectIdentifier(Root.self)] as? TypeTable<Root>
        } ?? makeTable(for: Root.self)
        if let known = lock.withLock({ table.resolved[keyPath] }) { return known }
        let result = table.resolve(keyPath)
        lock.withLock { table.resolved[keyPath] = result }
        return result
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var tables: [ObjectIdentifier: AnyObject] = [:]

    private static func makeTable<Root: Decodable>(for type: Root.Type) -> TypeTable<Root> {
        let table = TypeTable<Root>()
        return lock.withLock {
            if let existing = tables[ObjectIdentifier(type)] as? TypeTable<Root> { return existing }
            tables[ObjectIdentifier(type)] = table
            return table
        }
    }

    /// One type's prototypes, encoded as records, and the key paths resolved so far.
    private final class TypeTable<Root: Decodable> {
        let prototypes: (base: Root, variants: [(path: String, value: Root)])?
        /// Each prototype's stored fields, base first.
        let records: [FieldValue]
        var resolved: [PartialKeyPath<Root>: Result<String, Problem>] = [:]

        init() {
            prototypes = DeclaredFields.prototypes(of: Root.self)
            if let prototypes {
                records = ([prototypes.base] + prototypes.variants.map(\.value)).map { KeyPathFields.stored($0) ?? .null }
            } else {
                records = []
            }
        }

        func resolve(_ keyPath: PartialKeyPath<Root>) -> Result<String, Problem> {
            let described = String(describing: keyPath)
            func problem(_ reason: String) -> Result<String, Problem> { .failure(Problem(keyPath: described, reason: reason)) }
            guard let prototypes else {
                return problem("key paths are mapped to fields through values the type's init(from:) makes from made-up input, "
                    + "and it refused them, as an enum field does when the made-up raw value is none of its cases: "
                    + "make each enum the type holds CaseIterable (a case of its own is then used), "
                    + "or declare the indexes and options by field name (IndexDefinition(\"byKind\", [\"kind\"]))")
            }
            let values = ([prototypes.base] + prototypes.variants.map(\.value)).map { KeyPathFields.stored($0[keyPath: keyPath]) }
            guard let base = values[0] else { return problem("its value is not Encodable, so no field stores it") }
            let changedIn = prototypes.variants.indices.filter { values[$0 + 1] != base }.map { prototypes.variants[$0].path }
            guard var candidate = Self.commonPath(changedIn) else {
                return problem(changedIn.isEmpty ? "its value depends on no stored field (a computed property?)"
                    : "its value depends on several fields (\(changedIn.joined(separator: ", "))): a computed property?")
            }
            // The deepest path every change lies under; the key path may read one of its parents
            // (a nested struct with a single member).
            while true {
                let matches = records.indices.allSatisfy { values[$0] == KeyPathFields.value(at: candidate, in: records[$0]) }
                if matches { return .success(candidate) }
                guard let dot = candidate.lastIndex(of: ".") else { break }
                candidate = String(candidate[..<dot])
            }
            return problem("its value is not what any field holds (a computed property made from \(changedIn.joined(separator: ", "))?)")
        }

        /// The longest dotted path that every path in `paths` is, or lies below.
        static func commonPath(_ paths: [String]) -> String? {
            guard let first = paths.first else { return nil }
            var common = first.split(separator: ".", omittingEmptySubsequences: false)
            for path in paths.dropFirst() {
                let parts = path.split(separator: ".", omittingEmptySubsequences: false)
                common = Array(zip(common, parts).prefix { $0 == $1 }.map(\.0))
            }
            return common.isEmpty ? nil : common.joined(separator: ".")
        }
    }

    /// A value as a record stores it, or nil when it is not `Encodable`.
    private static func stored(_ value: Any) -> FieldValue? {
        guard let encodable = value as? any Encodable else { return nil }
        return try? FieldValueEncoder.encode(encodable)
    }

    /// The member at a dotted path of an encoded record.
    private static func value(at path: String, in record: FieldValue) -> FieldValue {
        var current = record
        for part in path.split(separator: ".", omittingEmptySubsequences: false) {
            guard case let .object(members) = current else { return .null }
            current = members[String(part)] ?? .null
        }
        return current
    }
}

extension Entity {
    /// The stored field `keyPath` reads, or the error naming it and `usedBy`.
    static func field(of keyPath: PartialKeyPath<Self>, usedBy: String) throws -> String {
        switch KeyPathFields.field(of: keyPath) {
        case let .success(name): return name
        case let .failure(problem): throw problem.error(entity: entityName, usedBy: usedBy)
        }
    }
}
