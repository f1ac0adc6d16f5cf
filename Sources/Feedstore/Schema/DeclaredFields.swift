import Foundation

/// The fields an entity's records can hold, learned from its `Decodable` conformance: a decoder
/// that answers every request with a placeholder and records each key asked for. Index
/// components, partial-index conditions and watch options are checked against it, so that a
/// misspelled name is an error instead of an index of nulls.
///
/// What it covers: synthesized conformances, and custom `init(from:)` that read a keyed
/// container (`decode`, `decodeIfPresent`, `contains`), with nested `Codable` structs (their
/// members become `"outer.inner"` paths), optionals, arrays, dictionaries (any member name is
/// accepted below them), ``FieldValue`` (likewise), `Date`, `UUID`, `URL`, `Data`, `Decimal` and
/// `CaseIterable` enums. Discovery stops at a value it cannot make up (an enum that is not
/// `CaseIterable`, a custom `init(from:)` that validates what it reads); ``isComplete`` is then
/// false, and the type's names are not checked.
///
/// The decoder also learns each field's kind from the `decode` call that asked for it (`Int64`
/// is `int`, `Date` is `date`, a struct is `object`…) and whether the field may be absent
/// (`decodeIfPresent`, `contains`, `decodeNil`, `Optional`): ``kinds``, which writes by name are
/// held to (``RecordShape``).
struct DeclaredFields: Sendable, Equatable {
    /// Every field and nested field, dotted (`"address.city"`).
    var paths: Set<String>
    /// Fields whose members are not fixed (dictionaries, custom single values): any path below
    /// them is accepted.
    var openPaths: Set<String>
    /// Whether decoding ran to the end, so that a name not in ``paths`` surely is not a field.
    var isComplete: Bool
    /// Per path, the kind its `decode` asked for in stored form: a ``FieldValue`` kind name
    /// (`"int"`, `"date"`, `"object"`…) or `"any"` (a ``FieldValue``, an enum without raw values,
    /// a path read as two kinds), with a trailing `"?"` when the field may be absent or null.
    /// Empty when the fields were declared by name (``Entity/fieldNames``).
    var kinds: [String: String] = [:]

    /// The fields `type` decodes.
    static func of<T: Decodable>(_ type: T.Type) -> DeclaredFields {
        let recording = FieldRecording()
        var complete = true
        do {
            _ = try FieldRecordingDecoder(recording: recording, path: "", depth: 0).placeholder(T.self)
        } catch {
            complete = false
        }
        var kinds: [String: String] = [:]
        for path in recording.paths {
            let kind = recording.kinds[path] ?? "any"
            kinds[path] = recording.optional.contains(path) ? kind + "?" : kind
        }
        return DeclaredFields(paths: recording.paths, openPaths: recording.openPaths, isComplete: complete, kinds: complete ? kinds : [:])
    }

    /// Values of `type` made up by the same decoder: a base one, and per field path one that
    /// differs from it in that field (nested fields, arrays and open members included), so that
    /// reading a key path from each tells which field it reads (``KeyPathFields``). Nil when the
    /// type's decoding cannot run on made-up values.
    static func prototypes<T: Decodable>(of type: T.Type) -> (base: T, variants: [(path: String, value: T)])? {
        let recording = FieldRecording()
        guard let base = try? FieldRecordingDecoder(recording: recording, path: "", depth: 0).placeholder(T.self) else { return nil }
        let variants = recording.paths.sorted().compactMap { path -> (path: String, value: T)? in
            let value = try? FieldRecordingDecoder(recording: FieldRecording(variant: path), path: "", depth: 0).placeholder(T.self)
            return value.map { (path, $0) }
        }
        return (base, variants)
    }

    /// The top-level field names, sorted (for messages).
    var topLevel: [String] { paths.filter { !$0.contains(".") }.sorted() }

    /// Whether `path` names a field: a recorded path, or a path below an open one.
    func contains(_ path: String) -> Bool {
        // A record read through `allKeys` (a dictionary-like entity) may hold any field.
        if paths.contains(path) || openPaths.contains("") { return true }
        var prefix = Substring(path)
        while let dot = prefix.lastIndex(of: ".") {
            prefix = prefix[..<dot]
            if openPaths.contains(String(prefix)) { return true }
        }
        return false
    }

    /// The stored form: the paths, open ones marked with a trailing `".*"`.
    var stored: [String] { (paths.subtracting(openPaths).union(openPaths.map { $0 + ".*" })).sorted() }

    init(paths: Set<String>, openPaths: Set<String>, isComplete: Bool, kinds: [String: String] = [:]) {
        self.paths = paths
        self.openPaths = openPaths
        self.isComplete = isComplete
        self.kinds = kinds
    }

    /// Reads the stored form back (a stored list is always complete).
    init(stored: [String]) {
        var paths = Set<String>()
        var open = Set<String>()
        for path in stored {
            if path.hasSuffix(".*") {
                let field = String(path.dropLast(2))
                open.insert(field)
                // The record itself ("" open) is not a field.
                if !field.isEmpty { paths.insert(field) }
            } else {
                paths.insert(path)
            }
        }
        self.init(paths: paths, openPaths: open, isComplete: true)
    }
}

// MARK: The recording decoder

private final class FieldRecording {
    /// The path whose value is made different from the usual placeholder (a prototype that
    /// differs from the base one in this field alone), or nil.
    let variant: String?
    var paths: Set<String> = []
    var openPaths: Set<String> = []
    /// The kind each path was decoded as ("any" once two kinds were asked for).
    var kinds: [String: String] = [:]
    /// Paths that may be absent or null.
    var optional: Set<String> = []

    init(variant: String? = nil) { self.variant = variant }

    func record(_ kind: String, at path: String) {
        guard !path.isEmpty else { return }
        if let seen = kinds[path], seen != kind {
            kinds[path] = "any"
        } else {
            kinds[path] = kind
        }
    }
}

/// `Optional`, so that the recording decoder can read a `decode(T?.self, forKey:)` as an
/// optional `T` rather than as a single value of unknown members.
private protocol RecordedOptional {
    static func placeholder(from decoder: FieldRecordingDecoder) throws -> Self
}

extension Optional: RecordedOptional where Wrapped: Decodable {
    fileprivate static func placeholder(from decoder: FieldRecordingDecoder) throws -> Self {
        .some(try decoder.placeholder(Wrapped.self))
    }
}

private struct RecordingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) { stringValue = String(intValue); self.intValue = intValue }
}

/// Values deeper than this read as absent, so a recursive type (a node with an optional parent)
/// ends.
private let maximumDepth = 8

private struct FieldRecordingDecoder: Decoder {
    let recording: FieldRecording
    /// The dotted path of the value being decoded ("" for the record itself).
    let path: String
    let depth: Int
    var codingPath: [any CodingKey] {
        path.isEmpty ? [] : path.split(separator: ".").map { RecordingKey(stringValue: String($0)) }
    }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        recording.record("object", at: path)
        return KeyedDecodingContainer(RecordingKeyedContainer<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        recording.record("array", at: path)
        if isVariant { return OneElementContainer(decoder: member("0")) }
        return EmptyUnkeyedContainer(codingPath: codingPath)
    }

    /// Whether this value is the one a variant prototype changes.
    var isVariant: Bool { !path.isEmpty && path == recording.variant }

    /// A value that reads itself as a single value (a wrapper, a dynamic value) may hold any
    /// members: its path is open.
    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        if !path.isEmpty { recording.openPaths.insert(path) }
        return RecordingSingleValue(decoder: self)
    }

    func member(_ key: String) -> FieldRecordingDecoder {
        let memberPath = path.isEmpty ? key : "\(path).\(key)"
        recording.paths.insert(memberPath)
        return FieldRecordingDecoder(recording: recording, path: memberPath, depth: depth + 1)
    }

    /// A value of `type` made up for this position: fixed values for the leaf types, the first
    /// case of a `CaseIterable` enum, or whatever `type`'s own `init(from:)` builds from this
    /// decoder.
    func placeholder<T: Decodable>(_ type: T.Type) throws -> T {
        if let kind = Self.leafKind(of: type) { recording.record(kind, at: path) }
        if isVariant, let value = Self.variantValue(type) { return value }
        switch type {
        case is FieldValue.Type:
            // A dynamic value may hold any members.
            if !path.isEmpty { recording.openPaths.insert(path) }
            return FieldValue.null as! T
        case is Date.Type: return Date(timeIntervalSinceReferenceDate: 0) as! T
        case is UUID.Type: return UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) as! T
        case is URL.Type: return URL(string: "feedstore:placeholder")! as! T
        case is Data.Type: return Data() as! T
        case is Decimal.Type: return Decimal(0) as! T
        case is String.Type: return "" as! T
        case is Bool.Type: return false as! T
        case is Double.Type: return 0.0 as! T
        case is Float.Type: return Float(0) as! T
        case is Int.Type: return 0 as! T
        case is Int64.Type: return Int64(0) as! T
        case is Int32.Type: return Int32(0) as! T
        case is Int16.Type: return Int16(0) as! T
        case is Int8.Type: return Int8(0) as! T
        case is UInt.Type: return UInt(0) as! T
        case is UInt64.Type: return UInt64(0) as! T
        case is UInt32.Type: return UInt32(0) as! T
        case is UInt16.Type: return UInt16(0) as! T
        case is UInt8.Type: return UInt8(0) as! T
        default: break
        }
        if let optional = type as? any RecordedOptional.Type {
            if !path.isEmpty { recording.optional.insert(path) }
            return try optional.placeholder(from: self) as! T
        }
        if let cases = type as? any CaseIterable.Type, let value = someCase(of: cases, second: isVariant) as? T {
            recording.record((type as? any RawRepresentable.Type).flatMap { Self.rawValueKind($0) } ?? "any", at: path)
            return value
        }
        return try T(from: self)
    }

    /// The first case of an enum, or its second one for a variant (the first when it has only one).
    private func someCase<C: CaseIterable>(of type: C.Type, second: Bool) -> Any? {
        var cases = C.allCases.makeIterator()
        let first = cases.next()
        return second ? cases.next() ?? first : first
    }

    /// A leaf value other than the usual placeholder, for a variant prototype.
    private static func variantValue<T>(_ type: T.Type) -> T? {
        let value: Any? = switch type {
        case is FieldValue.Type: FieldValue.int(1)
        case is Date.Type: Date(timeIntervalSinceReferenceDate: 1)
        case is UUID.Type: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1))
        case is URL.Type: URL(string: "feedstore:variant")!
        case is Data.Type: Data([1])
        case is Decimal.Type: Decimal(1)
        case is String.Type: "variant"
        case is Bool.Type: true
        case is Double.Type: 1.0
        case is Float.Type: Float(1)
        case is Int.Type: 1
        case is Int64.Type: Int64(1)
        case is Int32.Type: Int32(1)
        case is Int16.Type: Int16(1)
        case is Int8.Type: Int8(1)
        case is UInt.Type: UInt(1)
        case is UInt64.Type: UInt64(1)
        case is UInt32.Type: UInt32(1)
        case is UInt16.Type: UInt16(1)
        case is UInt8.Type: UInt8(1)
        default: nil
        }
        return value as? T
    }

    /// The stored kind of a leaf type's values, as ``FieldValueEncoder`` writes them; nil for
    /// types that are not leaves.
    static func leafKind(of type: Any.Type) -> String? {
        switch type {
        case is FieldValue.Type, is Decimal.Type: "any"
        case is Date.Type: "date"
        case is UUID.Type: "uuid"
        case is Data.Type: "bytes"
        case is URL.Type, is String.Type: "string"
        case is Bool.Type: "bool"
        case is Double.Type, is Float.Type: "double"
        case is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type, is Int8.Type: "int"
        case is UInt.Type, is UInt64.Type, is UInt32.Type, is UInt16.Type, is UInt8.Type: "uint"
        default: nil
        }
    }

    /// The kind a raw-value enum is stored as: its raw value's.
    private static func rawValueKind<R: RawRepresentable>(_ type: R.Type) -> String? { leafKind(of: R.RawValue.self) }
}

private struct RecordingKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: FieldRecordingDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    /// Asking for every key means the members are not fixed (a dictionary). A variant holds one
    /// member.
    var allKeys: [Key] {
        decoder.recording.openPaths.insert(decoder.path)
        return decoder.isVariant ? [Key(stringValue: "variant")].compactMap { $0 } : []
    }

    /// A member whose presence is asked about may be absent (`decodeIfPresent` asks first).
    func contains(_ key: Key) -> Bool {
        decoder.recording.optional.insert(decoder.member(key.stringValue).path)
        return true
    }

    /// Optional members are present, so that their own fields are learned too, down to the depth
    /// limit.
    func decodeNil(forKey key: Key) throws -> Bool {
        let member = decoder.member(key.stringValue)
        decoder.recording.optional.insert(member.path)
        return member.depth > maximumDepth
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try member(type, key) }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try member(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try member(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try member(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try member(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try member(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try member(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try member(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try member(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try member(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try member(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try member(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try member(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try member(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try member(type, key) }

    private func member<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        try decoder.member(key.stringValue).placeholder(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        KeyedDecodingContainer(RecordingKeyedContainer<NestedKey>(decoder: decoder.member(key.stringValue)))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        EmptyUnkeyedContainer(codingPath: decoder.member(key.stringValue).codingPath)
    }

    func superDecoder() throws -> any Decoder { decoder }
    func superDecoder(forKey key: Key) throws -> any Decoder { decoder.member(key.stringValue) }
}

/// A single value read by a type's own `init(from:)`: placeholders, as for members.
private struct RecordingSingleValue: SingleValueDecodingContainer {
    let decoder: FieldRecordingDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.placeholder(type) }

    func decode(_ type: Bool.Type) throws -> Bool { try decoder.placeholder(type) }
    func decode(_ type: String.Type) throws -> String { try decoder.placeholder(type) }
    func decode(_ type: Double.Type) throws -> Double { try decoder.placeholder(type) }
    func decode(_ type: Float.Type) throws -> Float { try decoder.placeholder(type) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.placeholder(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.placeholder(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.placeholder(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.placeholder(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.placeholder(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.placeholder(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.placeholder(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.placeholder(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.placeholder(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.placeholder(type) }
}

/// The array of a variant prototype: one placeholder element.
private struct OneElementContainer: UnkeyedDecodingContainer {
    let decoder: FieldRecordingDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { 1 }
    var isAtEnd: Bool { currentIndex > 0 }
    var currentIndex = 0

    private func end() -> DecodingError {
        .valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "one element"))
    }

    mutating func decodeNil() throws -> Bool { false }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard !isAtEnd else { throw end() }
        currentIndex += 1
        return try decoder.placeholder(type)
    }
    mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) throws -> KeyedDecodingContainer<N> {
        guard !isAtEnd else { throw end() }
        currentIndex += 1
        return try decoder.container(keyedBy: type)
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw end() }
    mutating func superDecoder() throws -> any Decoder { throw end() }
}

/// Arrays decode as empty: their elements are not fields a path can name.
private struct EmptyUnkeyedContainer: UnkeyedDecodingContainer {
    let codingPath: [any CodingKey]
    var count: Int? { 0 }
    var isAtEnd: Bool { true }
    var currentIndex: Int { 0 }

    private func end() -> DecodingError {
        .valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "no elements"))
    }

    mutating func decodeNil() throws -> Bool { throw end() }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { throw end() }
    mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) throws -> KeyedDecodingContainer<N> { throw end() }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw end() }
    mutating func superDecoder() throws -> any Decoder { throw end() }
}
