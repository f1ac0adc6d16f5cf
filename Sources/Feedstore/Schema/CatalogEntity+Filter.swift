extension CatalogEntity {
    /// `condition` checked as a filter of this entity's records, with its constants converted
    /// to the kinds the fields are stored as (by the table range components convert by): what
    /// every filtered read and watcher runs, and what a server can check before it opens one.
    /// - Throws: ``FeedstoreError/unknownField(entity:field:usedBy:fields:)`` for a field the
    ///   entity does not have; ``FeedstoreError/invalidFilter(entity:reason:)`` for a constant that
    ///   does not convert to its field's kind, or a text test on a field that is not text.
    public func checkedFilter(_ condition: IndexCondition) throws -> IndexCondition {
        func check(_ name: String) throws {
            let path = FieldPath(name)
            try checkField(path.rest.isEmpty ? name : path.head, usedBy: "the filter")
        }
        func constant(_ value: FieldValue, for name: String) throws -> FieldValue {
            guard let kind = keyKind(ofField: name), value != .null else { return value }
            let converted = FieldValue.coerce(value, to: kind)
            guard converted.kindName == kind else {
                throw FeedstoreError.invalidFilter(entity: self.name, reason: "field \(name) is stored as \(FieldValue.describingKind(kind)); "
                    + "the filter compares it with \(value.jsonText) (\(value.kindName)), which does not convert to it")
            }
            return converted
        }
        switch condition {
        case let .compare(name, comparison, value):
            try check(name)
            return .compare(field: name, comparison, try constant(value, for: name))
        case let .text(name, test):
            try check(name)
            if let kind = keyKind(ofField: name), kind != "string" {
                throw FeedstoreError.invalidFilter(entity: self.name, reason: "\(test.description) tests text, and field \(name) is stored as \(kind)")
            }
            return condition
        case let .oneOf(name, values):
            try check(name)
            return .oneOf(field: name, try values.map { try constant($0, for: name) })
        case let .isNull(name):
            try check(name)
            return condition
        case let .words(names, test):
            for name in names {
                try check(name)
                if let kind = keyKind(ofField: name), kind != "string" {
                    throw FeedstoreError.invalidFilter(entity: self.name, reason: "\(test.description) tests words of text, and field \(name) is stored as \(kind)")
                }
            }
            return condition
        case let .and(parts): return .and(try parts.map(checkedFilter))
        case let .or(parts): return .or(try parts.map(checkedFilter))
        case let .not(inner): return .not(try checkedFilter(inner))
        }
    }
}
