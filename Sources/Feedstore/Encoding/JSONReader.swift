import Foundation

/// Reads JSON text (RFC 8259) into a ``FieldValue`` in one pass over its bytes, keeping what
/// JSON's text says: a number written without fraction or exponent is an integer (`.int`, or
/// `.uint` beyond `Int64.max`), any other number a `.double`, so `2.0` stays a double and a
/// value printed by ``FieldValue/jsonText`` reads back as the same kind. Strict: one value,
/// surrounded by whitespace only; no duplicate keys; nesting at most ``maximumDepth``.
struct JSONReader {
    static let maximumDepth = RecordCodec.maximumDepth

    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    /// The value of `text`.
    /// - Throws: ``FeedstoreError/corruptData(what:reason:)`` naming where the text stops being JSON.
    static func value(of text: String) throws -> FieldValue {
        var text = text
        return try text.withUTF8 { utf8 in
            var reader = JSONReader(bytes: UnsafeRawBufferPointer(utf8))
            let value = try reader.value(depth: 0)
            reader.skipWhitespace()
            guard reader.offset == reader.bytes.count else { throw reader.failure("text after the value") }
            return value
        }
    }

    private init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    private func failure(_ reason: String) -> FeedstoreError {
        .corruptData(what: "JSON text", reason: "\(reason) at byte \(offset)")
    }

    private var current: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { offset += 1 }
    }

    private mutating func expect(_ word: String) throws {
        for byte in word.utf8 {
            guard current == byte else { throw failure("expected \(word)") }
            offset += 1
        }
    }

    private mutating func value(depth: Int) throws -> FieldValue {
        guard depth <= Self.maximumDepth else { throw failure("nesting deeper than \(Self.maximumDepth)") }
        skipWhitespace()
        switch current {
        case UInt8(ascii: "{"):
            offset += 1
            var members: [String: FieldValue] = [:]
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                offset += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw failure("expected a key") }
                let key = try string()
                skipWhitespace()
                try expect(":")
                guard members.updateValue(try value(depth: depth + 1), forKey: key) == nil else { throw failure("duplicate key \(key)") }
                skipWhitespace()
                if current == UInt8(ascii: ",") { offset += 1; continue }
                try expect("}")
                return .object(members)
            }
        case UInt8(ascii: "["):
            offset += 1
            var items: [FieldValue] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                offset += 1
                return .array(items)
            }
            while true {
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                if current == UInt8(ascii: ",") { offset += 1; continue }
                try expect("]")
                return .array(items)
            }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case let byte? where byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte): return try number()
        default: throw failure(current == nil ? "the text ends where a value should be" : "unexpected character")
        }
    }

    private mutating func number() throws -> FieldValue {
        let start = offset
        var integral = true
        if current == UInt8(ascii: "-") { offset += 1 }
        func digits() throws {
            let first = offset
            while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { offset += 1 }
            if offset == first { throw failure("expected digits") }
        }
        if current == UInt8(ascii: "0") { offset += 1 } else { try digits() }
        if current == UInt8(ascii: ".") {
            integral = false
            offset += 1
            try digits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            integral = false
            offset += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { offset += 1 }
            try digits()
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
        if integral {
            if let i = Int64(text) { return .int(i) }
            if let u = UInt64(text) { return .uint(u) }
        }
        guard let d = Double(text) else { throw failure("number \(text) is out of range") }
        return .double(d)
    }

    /// A string, its opening quote at `offset`.
    private mutating func string() throws -> String {
        offset += 1
        let start = offset
        // Strings without escapes are copied in one piece.
        while let byte = current, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\"), byte >= 0x20 { offset += 1 }
        guard let stop = current else { throw failure("unterminated string") }
        if stop == UInt8(ascii: "\"") {
            offset += 1
            return try Self.validated(UnsafeRawBufferPointer(rebasing: bytes[start..<offset - 1]), at: start, self)
        }
        var utf8 = Array(bytes[start..<offset])
        while true {
            guard let byte = current else { throw failure("unterminated string") }
            offset += 1
            switch byte {
            case UInt8(ascii: "\""):
                return try utf8.withUnsafeBytes { try Self.validated($0, at: start, self) }
            case UInt8(ascii: "\\"):
                guard let escaped = current else { throw failure("unterminated string") }
                offset += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escaped)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        try expect("\\u")
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let character = Unicode.Scalar(scalar) else { throw failure("unpaired surrogate") }
                    utf8.append(contentsOf: String(character).utf8)
                default: throw failure("unknown escape")
                }
            case 0..<0x20: throw failure("control character in a string")
            default: utf8.append(byte)
            }
        }
    }

    private mutating func hex4() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = Self.hexDigit(byte) else { throw failure("expected four hex digits") }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// `utf8` as a string, which it must be whole: JSON text is UTF-8.
    private static func validated(_ utf8: UnsafeRawBufferPointer, at start: Int, _ reader: JSONReader) throws -> String {
        guard let string = String(validating: utf8.bindMemory(to: UInt8.self), as: UTF8.self) else {
            throw FeedstoreError.corruptData(what: "JSON text", reason: "a string that is not UTF-8 at byte \(start)")
        }
        return string
    }
}
