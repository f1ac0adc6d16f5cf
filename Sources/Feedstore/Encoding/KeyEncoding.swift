import Foundation

/// Order-preserving, self-describing encoding of key components: for keys `a` and `b` (tuples of
/// ``FieldValue``), `memcmp(encode(a), encode(b))` orders exactly as `a` and `b` do.
///
/// Each component starts with a tag byte naming its kind (in ``FieldValue``'s kind order, nil
/// first), then a payload that sorts within the kind:
/// - integers: 8 bytes big-endian, the sign bit flipped for signed ones;
/// - doubles and dates (seconds since 2001): IEEE bits, all inverted when negative, otherwise the
///   sign bit set; `-0.0` is written as `0.0` and every NaN as one NaN above `+infinity`;
/// - strings (NFC-normalized UTF-8, so canonically equal strings have one key) and bytes:
///   `0x00` escaped as `0x00 0xFF`, terminated by `0x00 0x00`, so prefixes sort first;
/// - UUIDs: their 16 bytes.
/// A descending component is the ascending one with every byte inverted. Tags are below `0x80`, so
/// an inverted tag (`>= 0x80`) marks a descending component and keys decode without a schema.
enum KeyEncoding {
    enum Tag: UInt8 {
        case null = 0x05
        case falseValue = 0x10
        case trueValue = 0x11
        case int = 0x20
        case uint = 0x28
        case double = 0x30
        case date = 0x38
        case string = 0x40
        case bytes = 0x48
        case uuid = 0x50
    }

    /// Appends one component. Arrays and objects cannot be key components.
    static func append(_ value: FieldValue, descending: Bool, to out: inout [UInt8]) throws(KeyEncodingError) {
        let start = out.count
        switch value {
        case .null: out.append(Tag.null.rawValue)
        case let .bool(b): out.append(b ? Tag.trueValue.rawValue : Tag.falseValue.rawValue)
        case let .int(i):
            out.append(Tag.int.rawValue)
            out.appendBigEndian(UInt64(bitPattern: i) ^ (1 << 63))
        case let .uint(u):
            out.append(Tag.uint.rawValue)
            out.appendBigEndian(u)
        case let .double(d):
            out.append(Tag.double.rawValue)
            out.appendBigEndian(orderedBits(d))
        case let .date(d):
            out.append(Tag.date.rawValue)
            out.appendBigEndian(orderedBits(d.timeIntervalSinceReferenceDate))
        case let .string(s):
            out.append(Tag.string.rawValue)
            appendEscaped(normalized(s).utf8, to: &out)
        case let .bytes(b):
            out.append(Tag.bytes.rawValue)
            appendEscaped(b, to: &out)
        case let .uuid(u):
            out.append(Tag.uuid.rawValue)
            withUnsafeBytes(of: u.uuid) { out.append(contentsOf: $0) }
        case .array, .object:
            throw KeyEncodingError.notScalar(value.kindName)
        }
        if descending {
            for i in start..<out.count { out[i] = ~out[i] }
        }
    }

    /// Encodes a whole key, or leading components: `components[i]` takes the direction
    /// `descending[offset + i]` (ascending when `descending` is nil).
    static func encode(_ components: [FieldValue], descending: [Bool]? = nil, offset: Int = 0) throws(KeyEncodingError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(components.count * 10)
        for (i, c) in components.enumerated() {
            try append(c, descending: descending?[offset + i] ?? false, to: &out)
        }
        return out
    }

    /// Canonical NFC form, so canonically equivalent strings share one key; ASCII is already NFC.
    static func normalized(_ s: String) -> String {
        if s.utf8.allSatisfy({ $0 < 0x80 }) { return s }
        return s.precomposedStringWithCanonicalMapping
    }

    @inline(__always)
    static func orderedBits(_ d: Double) -> UInt64 {
        let canonical: Double = d.isNaN ? .nan : (d == 0 ? 0 : d)
        let bits = canonical.bitPattern
        return bits & (1 << 63) != 0 ? ~bits : bits | (1 << 63)
    }

    static func double(fromOrderedBits bits: UInt64) -> Double {
        Double(bitPattern: bits & (1 << 63) != 0 ? bits & ~(1 << 63) : ~bits)
    }

    private static func appendEscaped<S: Sequence<UInt8>>(_ bytes: S, to out: inout [UInt8]) {
        for b in bytes {
            out.append(b)
            if b == 0 { out.append(0xFF) }
        }
        out.append(0)
        out.append(0)
    }

    /// The smallest byte string greater than every string that starts with `prefix`, or nil when
    /// there is none (all bytes `0xFF`). Turns "starts with" into a half-open range end.
    static func successor(ofPrefix prefix: [UInt8]) -> [UInt8]? {
        var bytes = prefix
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }
}

/// Why a value could not be encoded as a key component.
enum KeyEncodingError: Error, Equatable {
    case notScalar(String)
}
