/// An encoded index entry key: the index components followed by the primary key. Keys of one
/// index compare (bytewise) in index order.
public struct IndexKey: Sendable, Hashable, Comparable {
    /// The encoded key.
    public let bytes: [UInt8]

    /// Wraps an encoded key.
    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// Index order: bytewise comparison of the encoded keys.
    public static func < (lhs: IndexKey, rhs: IndexKey) -> Bool { lhs.bytes.sortsBefore(rhs.bytes) }

    /// The decoded components; the last one is the primary key.
    public func components() throws -> [FieldValue] { try KeyDecoder.decode(bytes).map(\.value) }
}
