/// A record in the stored encoding (``FieldValue/storedEncoding`` of an object), checked once:
/// how replication ships a record exactly, and what a replica stores without first building its
/// fields by name.
@_spi(Replication) public struct ShippedRecord: Sendable, Equatable {
    /// The encoding, one object.
    public let bytes: [UInt8]

    /// Checks that `bytes` hold one object in the stored encoding.
    /// - Throws: ``FeedstoreError/corruptData(what:reason:)`` when they do not.
    public init(validating bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in
            try RecordCodec.validateValue(raw)
            guard try StoredValue(raw, at: 0).tag() == .object else {
                throw FeedstoreError.corruptData(what: "a stored record", reason: "a \(StoredValue(raw, at: 0).kindName), not an object")
            }
        }
        self.bytes = bytes
    }

    /// The record's fields by name.
    public func fields() throws -> [String: FieldValue] {
        guard case let .object(fields) = try bytes.withUnsafeBytes({ try StoredValue($0, at: 0).fieldValue() }) else { return [:] }
        return fields
    }

    /// The fields that hold a value (null is no value), by name, in stored order: unique
    /// names, as the check made sure.
    func valuedFields() throws -> [(key: String, value: FieldValue)] {
        try bytes.withUnsafeBytes { raw in
            guard var members = try StoredValue(raw, at: 0).members() else { return [] }
            var fields: [(key: String, value: FieldValue)] = []
            fields.reserveCapacity(members.count)
            while let (name, value) = try members.next() {
                if try value.tag() != .null { fields.append((String(decoding: name, as: UTF8.self), try value.fieldValue())) }
            }
            return fields
        }
    }
}
