/// Why a record written by field name was refused, for one field
/// (``FeedstoreError/recordRefused(entity:id:field:reason:)``).
public enum FieldRefusal: Sendable, Hashable, Codable {
    /// The value is of another kind than the one the entity's type reads, even after the
    /// documented conversions (ISO 8601 text to a date, base64 text to bytes, UUID text to a
    /// UUID, integral numbers between the integer and double kinds).
    case wrongKind(expected: String, value: FieldValue)
    /// The type requires the field, and the record lacks it or holds null there.
    case missing(expected: String)
    /// The type does not declare the field.
    case undeclared(declared: [String])

    /// A sentence about `field`, for messages.
    public func describing(field: String) -> String {
        switch self {
        case let .wrongKind(expected, value):
            let text = value.jsonText
            let shown = text.count > 60 ? String(text.prefix(57)) + "…" : text
            return "field \(field) must hold \(Self.article(expected)) \(expected), not \(Self.article(value.kindName)) \(value.kindName) (\(shown))"
        case let .missing(expected):
            return "field \(field) (\(expected)) is required and missing"
        case let .undeclared(declared):
            return "field \(field) is not one the entity's type declares (\(declared.joined(separator: ", "))); "
                + "keep it with keepingUndeclaredFields (storectl load --keep-undeclared-fields)"
        }
    }

    private static func article(_ kind: String) -> String {
        kind.first.map { "aeiou".contains($0) } == true ? "an" : "a"
    }
}

/// What a record of an entity must look like for its type to read it back: per declared field
/// (nested ones too) the kind its `decode` asks for and whether it may be absent, built from the
/// catalog (``CatalogEntity/declaredKinds``). Writes by field name are held to it (converting
/// what converts losslessly first); `verify` checks stored records against it as they are.
///
/// An entity declared without a Swift type has the shape its records taught the catalog: every
/// field optional, each of the one kind it has held, and any new field accepted.
struct RecordShape: Sendable {
    /// A field, or the record itself at the root.
    struct Node: Sendable {
        /// A ``FieldValue`` kind name, or "any".
        var kind = "any"
        var isOptional = false
        var members: [String: Node] = [:]
        /// Member names in order, so that a record's first problem is always the same one.
        var memberNames: [String] = []
        /// Whether members other than ``members`` may appear (dictionaries, dynamic values, a
        /// record of an entity without a type).
        var isOpen = false

        var expected: String { isOptional ? "\(kind), optional" : kind }
    }

    let root: Node

    /// The shape of `entity`'s records, or nil when nothing is known to hold them to.
    init?(_ entity: CatalogEntity) {
        if let stored = entity.declaredFields {
            let declared = DeclaredFields(stored: stored)
            // The record itself reads any member: nothing to hold.
            if declared.openPaths.contains("") { return nil }
            var root = Node(kind: "object")
            for path in declared.paths {
                let kind = entity.declaredKinds?[path] ?? "any?"
                let optional = kind.hasSuffix("?")
                root.insert(path: path[...], kind: optional ? String(kind.dropLast()) : kind, optional: optional,
                            open: declared.openPaths.contains(path))
            }
            root.sortMembers()
            self.root = root
        } else {
            var root = Node(kind: "object", isOpen: true)
            for field in entity.fields where field.kind != "mixed" {
                root.members[field.name] = Node(kind: field.kind, isOptional: true)
            }
            guard !root.members.isEmpty else { return nil }
            root.sortMembers()
            self.root = root
        }
    }

    /// `fields` with each value converted to its field's kind, or the first field the type could
    /// not read back.
    /// - Parameter keepingUndeclared: accept fields the type does not declare, as given.
    func conform(_ fields: [String: FieldValue], keepingUndeclared: Bool) -> Result<[String: FieldValue], Problem> {
        var converted = fields
        if let problem = root.check(&converted, at: "", converting: true, keepingUndeclared: keepingUndeclared) {
            return .failure(problem)
        }
        return .success(converted)
    }

    /// The first declared field of a stored record that its type could not read back (values
    /// as stored, no conversion; fields the type does not declare are not problems).
    func problem(in fields: [String: FieldValue]) -> Problem? {
        var fields = fields
        return root.check(&fields, at: "", converting: false, keepingUndeclared: true)
    }

    struct Problem: Error, Equatable {
        /// The field's dotted path.
        var field: String
        var reason: FieldRefusal
    }
}

extension RecordShape.Node {
    fileprivate mutating func insert(path: Substring, kind: String, optional: Bool, open: Bool) {
        if let dot = path.firstIndex(of: ".") {
            let head = String(path[..<dot])
            members[head, default: Self(kind: "object", isOptional: true)].insert(path: path[path.index(after: dot)...], kind: kind,
                                                                                  optional: optional, open: open)
        } else {
            let name = String(path)
            var node = members[name] ?? Self()
            node.kind = kind
            node.isOptional = optional
            node.isOpen = open || kind == "any"
            members[name] = node
        }
    }

    fileprivate mutating func sortMembers() {
        memberNames = members.keys.sorted()
        for name in memberNames { members[name]!.sortMembers() }
    }

    /// Checks (and, `converting`, converts in place) the members of an object held to this node.
    fileprivate func check(_ object: inout [String: FieldValue], at prefix: String, converting: Bool,
                           keepingUndeclared: Bool) -> RecordShape.Problem?
    {
        for name in memberNames {
            let member = members[name]!
            let path = prefix.isEmpty ? name : "\(prefix).\(name)"
            guard let value = object[name], value.kindRank != 0 else {
                if member.isOptional { continue }
                return RecordShape.Problem(field: path, reason: .missing(expected: member.kind))
            }
            switch member.conform(value, at: path, converting: converting, keepingUndeclared: keepingUndeclared) {
            case let .success(conformed): if converting { object[name] = conformed }
            case let .failure(problem): return problem
            }
        }
        if !isOpen && !keepingUndeclared {
            for name in object.keys.sorted() where members[name] == nil && object[name]!.kindRank != 0 {
                return RecordShape.Problem(field: prefix.isEmpty ? name : "\(prefix).\(name)", reason: .undeclared(declared: memberNames))
            }
        }
        return nil
    }

    private func conform(_ value: FieldValue, at path: String, converting: Bool, keepingUndeclared: Bool) -> Result<FieldValue, RecordShape.Problem> {
        if kind == "any" { return .success(value) }
        let converted = converting ? FieldValue.coerce(value, to: kind) : value
        guard converted.kindName == kind else { return .failure(RecordShape.Problem(field: path, reason: .wrongKind(expected: kind, value: value))) }
        guard case var .object(object) = converted, !members.isEmpty || !isOpen else { return .success(converted) }
        if let problem = check(&object, at: path, converting: converting, keepingUndeclared: keepingUndeclared) { return .failure(problem) }
        return .success(.object(object))
    }
}
