import Foundation

/// Turns any `Encodable` value into a ``FieldValue`` tree. `Date`, `UUID`, `Data` and `URL` keep
/// their own kinds (date, uuid, bytes, string); every integer type becomes `.int` or `.uint`.
struct FieldValueEncoder {
    static func encode<T: Encodable>(_ value: T) throws -> FieldValue {
        if let special = specialValue(value) { return special }
        let node = EncodingNode()
        try value.encode(to: NodeEncoder(node: node, codingPath: []))
        return node.finish()
    }

    static func specialValue(_ value: Any) -> FieldValue? {
        switch value {
        case let d as Date: .date(d)
        case let u as UUID: .uuid(u)
        case let d as Data: .bytes([UInt8](d))
        case let u as URL: .string(u.absoluteString)
        default: nil
        }
    }
}

/// A slot in the tree being built; containers write into it.
private final class EncodingNode {
    enum Content {
        case empty
        case value(FieldValue)
        case object([String: EncodingNode])
        case array([EncodingNode])
    }

    var content: Content = .empty

    func finish() -> FieldValue {
        switch content {
        case .empty: .null
        case let .value(v): v
        case let .object(members): .object(members.mapValues { $0.finish() })
        case let .array(items): .array(items.map { $0.finish() })
        }
    }

    func member(_ key: String) -> EncodingNode {
        var members: [String: EncodingNode] = [:]
        if case let .object(existing) = content { members = existing }
        let child = members[key] ?? EncodingNode()
        members[key] = child
        content = .object(members)
        return child
    }

    func appendElement() -> EncodingNode {
        var items: [EncodingNode] = []
        if case let .array(existing) = content { items = existing }
        let child = EncodingNode()
        items.append(child)
        content = .array(items)
        return child
    }

    func set<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws {
        if let special = FieldValueEncoder.specialValue(value) {
            content = .value(special)
        } else {
            try value.encode(to: NodeEncoder(node: self, codingPath: codingPath))
        }
    }
}

private struct NodeEncoder: Encoder {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = node.content {} else { node.content = .object([:]) }
        return KeyedEncodingContainer(KeyedNodeContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = node.content {} else { node.content = .array([]) }
        return UnkeyedNodeContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleNodeContainer(node: node, codingPath: codingPath)
    }
}

/// Scalar encoding shared by the three container kinds.
private protocol ScalarEncoding {
    func put(_ value: FieldValue) throws
}

private extension ScalarEncoding {
    func putInteger<T: BinaryInteger>(_ v: T) throws {
        if T.isSigned { try put(.int(Int64(v))) } else { try put(.uint(UInt64(v))) }
    }
}

private struct KeyedNodeContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    private func set(_ value: FieldValue, _ key: Key) { node.member(key.stringValue).content = .value(value) }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(.double(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(.double(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.uint(UInt64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.uint(value), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try node.member(key.stringValue).set(value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        NodeEncoder(node: node.member("super"), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        NodeEncoder(node: node.member(key.stringValue), codingPath: codingPath + [key])
    }
}

private struct UnkeyedNodeContainer: UnkeyedEncodingContainer, ScalarEncoding {
    let node: EncodingNode
    let codingPath: [any CodingKey]
    var count: Int {
        if case let .array(items) = node.content { return items.count }
        return 0
    }

    func put(_ value: FieldValue) throws { node.appendElement().content = .value(value) }

    mutating func encodeNil() throws { try put(.null) }
    mutating func encode(_ value: Bool) throws { try put(.bool(value)) }
    mutating func encode(_ value: String) throws { try put(.string(value)) }
    mutating func encode(_ value: Double) throws { try put(.double(value)) }
    mutating func encode(_ value: Float) throws { try put(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { try putInteger(value) }
    mutating func encode(_ value: Int8) throws { try putInteger(value) }
    mutating func encode(_ value: Int16) throws { try putInteger(value) }
    mutating func encode(_ value: Int32) throws { try putInteger(value) }
    mutating func encode(_ value: Int64) throws { try putInteger(value) }
    mutating func encode(_ value: UInt) throws { try putInteger(value) }
    mutating func encode(_ value: UInt8) throws { try putInteger(value) }
    mutating func encode(_ value: UInt16) throws { try putInteger(value) }
    mutating func encode(_ value: UInt32) throws { try putInteger(value) }
    mutating func encode(_ value: UInt64) throws { try putInteger(value) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try node.appendElement().set(value, codingPath: codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        NodeEncoder(node: node.appendElement(), codingPath: codingPath).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        NodeEncoder(node: node.appendElement(), codingPath: codingPath).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        NodeEncoder(node: node.appendElement(), codingPath: codingPath)
    }
}

private struct SingleNodeContainer: SingleValueEncodingContainer, ScalarEncoding {
    let node: EncodingNode
    let codingPath: [any CodingKey]

    func put(_ value: FieldValue) throws { node.content = .value(value) }

    mutating func encodeNil() throws { try put(.null) }
    mutating func encode(_ value: Bool) throws { try put(.bool(value)) }
    mutating func encode(_ value: String) throws { try put(.string(value)) }
    mutating func encode(_ value: Double) throws { try put(.double(value)) }
    mutating func encode(_ value: Float) throws { try put(.double(Double(value))) }
    mutating func encode(_ value: Int) throws { try putInteger(value) }
    mutating func encode(_ value: Int8) throws { try putInteger(value) }
    mutating func encode(_ value: Int16) throws { try putInteger(value) }
    mutating func encode(_ value: Int32) throws { try putInteger(value) }
    mutating func encode(_ value: Int64) throws { try putInteger(value) }
    mutating func encode(_ value: UInt) throws { try putInteger(value) }
    mutating func encode(_ value: UInt8) throws { try putInteger(value) }
    mutating func encode(_ value: UInt16) throws { try putInteger(value) }
    mutating func encode(_ value: UInt32) throws { try putInteger(value) }
    mutating func encode(_ value: UInt64) throws { try putInteger(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try node.set(value, codingPath: codingPath) }
}
