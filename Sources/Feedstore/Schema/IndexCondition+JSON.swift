/// Conditions as JSON, the form tools and the live-query protocol take a filter in:
///
/// ```json
/// {"field": "isRead", "==": false}
/// {"field": "title", "contains": "report", "caseInsensitive": true, "diacriticInsensitive": true}
/// {"field": "folder", "in": [1, 2]}
/// {"field": "tag", "isNull": true}
/// {"fields": ["title", "body"], "word": "report"}
/// {"field": "title", "wordPrefix": "rep"}
/// {"and": [{"field": "folder", ">=": 2}, {"not": {"field": "title", "hasPrefix": "Re:"}}]}
/// ```
///
/// A field test names one `field` and exactly one test: a comparison (`==`, `!=`, `<`, `<=`, `>`,
/// `>=`) with a value, a text test (`equals`, `contains`, `hasPrefix`, `hasSuffix`) with a string
/// and optional `caseInsensitive` / `diacriticInsensitive`, `in` with an array of values, or
/// `isNull` with `true` (or `false`, for "has a value"). A word test names `field` or `fields`
/// (an array of names) and `word` or `wordPrefix` with a string. Values are JSON; they convert to the
/// field's stored kind when the query runs (ISO 8601 strings to dates, and so on).
extension IndexCondition {
    /// JSON that is not a condition; `reason` says what is wrong and what is expected.
    public struct SyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
        public var reason: String
        public var description: String { "not a filter condition: \(reason)" }
    }

    /// How deeply conditions may nest in JSON, so a hostile text cannot exhaust the stack.
    public static let maximumJSONDepth = 32

    /// Parses the JSON form.
    /// - Throws: ``SyntaxError``, naming what is wrong.
    public init(jsonText: String) throws {
        let value: FieldValue
        do { value = try FieldValue(jsonText: jsonText) } catch { throw SyntaxError(reason: "\(error)") }
        try self.init(json: value)
    }

    /// Parses the JSON form, already read as a value.
    /// - Throws: ``SyntaxError``, naming what is wrong.
    public init(json: FieldValue) throws {
        self = try Self.parse(json, depth: 0)
    }

    private static let comparisons: [String: Comparison] = ["==": .equal, "!=": .notEqual, "<": .less, "<=": .lessOrEqual,
                                                            ">": .greater, ">=": .greaterOrEqual]
    private static let textMatches: [String: TextTest.Match] = ["equals": .equals, "contains": .contains, "hasPrefix": .hasPrefix,
                                                               "hasSuffix": .hasSuffix]
    private static let fieldTests = Set(comparisons.keys).union(textMatches.keys).union(["in", "isNull"])

    private static func parse(_ json: FieldValue, depth: Int) throws -> IndexCondition {
        guard depth < maximumJSONDepth else { throw SyntaxError(reason: "conditions nest deeper than \(maximumJSONDepth) levels") }
        guard case let .object(members) = json else {
            throw SyntaxError(reason: #"expected an object such as {"field": "isRead", "==": false}, got \#(json.jsonText)"#)
        }
        func parts(_ name: String) throws -> [IndexCondition] {
            guard members.count == 1, case let .array(items)? = members[name], !items.isEmpty else {
                throw SyntaxError(reason: "\"\(name)\" takes a non-empty array of conditions and nothing beside it")
            }
            return try items.map { try parse($0, depth: depth + 1) }
        }
        if members["and"] != nil { return .and(try parts("and")) }
        if members["or"] != nil { return .or(try parts("or")) }
        if let inner = members["not"] {
            guard members.count == 1 else { throw SyntaxError(reason: #""not" takes one condition and nothing beside it"#) }
            return .not(try parse(inner, depth: depth + 1))
        }
        if members["word"] != nil || members["wordPrefix"] != nil { return try parseWords(members) }
        guard case let .string(field)? = members["field"], !field.isEmpty else {
            throw SyntaxError(reason: #"expected "field" (a field name) with one test, or "and", "or", "not"; got \#(json.jsonText)"#)
        }
        let tests = members.keys.filter(fieldTests.contains)
        guard tests.count == 1, let test = tests.first else {
            throw SyntaxError(reason: "field \(field) needs exactly one test of \(fieldTests.sorted().joined(separator: ", ")); "
                + "got \(tests.isEmpty ? "none" : tests.sorted().joined(separator: ", "))")
        }
        let options: Set<String> = textMatches[test] != nil ? ["caseInsensitive", "diacriticInsensitive"] : []
        if let unknown = members.keys.filter({ $0 != "field" && $0 != test && !options.contains($0) }).sorted().first {
            throw SyntaxError(reason: "\"\(unknown)\" is not part of the test of field \(field)")
        }
        let operand = members[test]!
        if let comparison = comparisons[test] { return .compare(field: field, comparison, operand) }
        if let match = textMatches[test] {
            guard case let .string(text) = operand else { throw SyntaxError(reason: "\"\(test)\" of field \(field) takes a string") }
            func flag(_ name: String) throws -> Bool {
                switch members[name] {
                case nil: return false
                case let .bool(b)?: return b
                default: throw SyntaxError(reason: "\"\(name)\" takes true or false")
                }
            }
            return .text(field: field, TextTest(match, text, caseInsensitive: try flag("caseInsensitive"),
                                                diacriticInsensitive: try flag("diacriticInsensitive")))
        }
        if test == "in" {
            guard case let .array(values) = operand else { throw SyntaxError(reason: "\"in\" of field \(field) takes an array of values") }
            return .oneOf(field: field, values)
        }
        guard case let .bool(isNull) = operand else { throw SyntaxError(reason: "\"isNull\" of field \(field) takes true or false") }
        return isNull ? .isNull(field: field) : .not(.isNull(field: field))
    }

    private static func parseWords(_ members: [String: FieldValue]) throws -> IndexCondition {
        let match: WordTest.Match = members["word"] != nil ? .equals : .hasPrefix
        guard members["word"] == nil || members["wordPrefix"] == nil else { throw SyntaxError(reason: #"a word test takes "word" or "wordPrefix", not both"#) }
        guard case let .string(word)? = members[match.rawValue] else { throw SyntaxError(reason: "\"\(match.rawValue)\" takes a string") }
        var fields: [String] = []
        switch (members["field"], members["fields"]) {
        case let (.string(field)?, nil): fields = [field]
        case let (nil, .array(items)?):
            fields = try items.map { item in
                guard case let .string(name) = item else { throw SyntaxError(reason: #""fields" takes an array of field names"#) }
                return name
            }
        default: throw SyntaxError(reason: #"a word test names "field" (a field name) or "fields" (an array of them)"#)
        }
        guard !fields.isEmpty, !fields.contains(where: \.isEmpty) else { throw SyntaxError(reason: "a word test names at least one field, none empty") }
        if let unknown = members.keys.filter({ $0 != "field" && $0 != "fields" && $0 != match.rawValue }).sorted().first {
            throw SyntaxError(reason: "\"\(unknown)\" is not part of a word test")
        }
        return .words(fields: fields, WordTest(match, word))
    }

    /// The condition in the JSON form ``init(jsonText:)`` reads.
    public var jsonText: String { json.jsonText }

    /// The condition as a JSON value.
    public var json: FieldValue {
        switch self {
        case let .compare(field, comparison, value): return .object(["field": .string(field), comparison.rawValue: value])
        case let .text(field, test):
            var members: [String: FieldValue] = ["field": .string(field), test.match.rawValue: .string(test.text)]
            if test.caseInsensitive { members["caseInsensitive"] = true }
            if test.diacriticInsensitive { members["diacriticInsensitive"] = true }
            return .object(members)
        case let .oneOf(field, values): return .object(["field": .string(field), "in": .array(values)])
        case let .isNull(field): return .object(["field": .string(field), "isNull": true])
        case let .words(fields, test):
            let named: (String, FieldValue) = fields.count == 1 ? ("field", .string(fields[0])) : ("fields", .array(fields.map(FieldValue.string)))
            return .object([named.0: named.1, test.match.rawValue: .string(test.word)])
        case let .and(parts): return .object(["and": .array(parts.map(\.json))])
        case let .or(parts): return .object(["or": .array(parts.map(\.json))])
        case let .not(inner): return .object(["not": inner.json])
        }
    }
}
