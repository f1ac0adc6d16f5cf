import Foundation

extension FieldValue {
    /// The value in the binary form records are stored in: exact for every kind, nested values
    /// included (JSON text has no dates, UUIDs or bytes, and keeps dates to the millisecond).
    /// Replication ships records in it.
    @_spi(Replication) public var storedEncoding: [UInt8] {
        var out: [UInt8] = []
        RecordCodec.appendValue(self, to: &out)
        return out
    }

    /// Reads a value in the form ``storedEncoding`` writes, strictly.
    /// - Throws: ``FeedstoreError/corruptData(what:reason:)`` when the bytes are not one value.
    @_spi(Replication) public init(storedEncoding bytes: [UInt8]) throws {
        self = try bytes.withUnsafeBytes { raw in
            try RecordCodec.validateValue(raw)
            return try StoredValue(raw, at: 0).fieldValue()
        }
    }
}
