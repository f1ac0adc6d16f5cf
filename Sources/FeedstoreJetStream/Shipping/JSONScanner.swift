import Feedstore

/// Finds the members of JSON objects and the elements of arrays without building their values,
/// so that a reader of envelopes parses only the values it uses (a replica reads an entry's
/// exact `stored` record and skips its `after` and `indexKeys`).
struct JSONScanner {
    let bytes: [UInt8]

    struct Malformed: Error, CustomStringConvertible {
        var offset: Int
        var description: String { "malformed JSON at byte \(offset)" }
    }

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The members of the object that `range` holds, by name, each the range of its value.
    func members(of range: Range<Int>) throws -> [String: Range<Int>] {
        var i = skipSpace(range.lowerBound)
        guard i < range.upperBound, bytes[i] == UInt8(ascii: "{") else { throw Malformed(offset: i) }
        i = skipSpace(i + 1)
        var found: [String: Range<Int>] = [:]
        if i < range.upperBound, bytes[i] == UInt8(ascii: "}") { return found }
        while true {
            let keyEnd = try endOfValue(at: i)
            let key = try string(in: i..<keyEnd)
            i = skipSpace(keyEnd)
            guard i < range.upperBound, bytes[i] == UInt8(ascii: ":") else { throw Malformed(offset: i) }
            let start = skipSpace(i + 1)
            let end = try endOfValue(at: start)
            found[key] = start..<end
            i = skipSpace(end)
            guard i < range.upperBound else { throw Malformed(offset: i) }
            if bytes[i] == UInt8(ascii: "}") { return found }
            guard bytes[i] == UInt8(ascii: ",") else { throw Malformed(offset: i) }
            i = skipSpace(i + 1)
        }
    }

    /// The ranges of the elements of the array that `range` holds.
    func elements(of range: Range<Int>) throws -> [Range<Int>] {
        var i = skipSpace(range.lowerBound)
        guard i < range.upperBound, bytes[i] == UInt8(ascii: "[") else { throw Malformed(offset: i) }
        i = skipSpace(i + 1)
        var found: [Range<Int>] = []
        if i < range.upperBound, bytes[i] == UInt8(ascii: "]") { return found }
        while true {
            let end = try endOfValue(at: i)
            found.append(i..<end)
            i = skipSpace(end)
            guard i < range.upperBound else { throw Malformed(offset: i) }
            if bytes[i] == UInt8(ascii: "]") { return found }
            guard bytes[i] == UInt8(ascii: ",") else { throw Malformed(offset: i) }
            i = skipSpace(i + 1)
        }
    }

    /// Whether `range` holds `null`.
    func isNull(_ range: Range<Int>) -> Bool { bytes[range].elementsEqual("null".utf8) }

    /// The string that `range` holds (a JSON string, quotes included).
    func string(in range: Range<Int>) throws -> String {
        guard range.count >= 2, bytes[range.lowerBound] == UInt8(ascii: "\""), bytes[range.upperBound - 1] == UInt8(ascii: "\"") else {
            throw Malformed(offset: range.lowerBound)
        }
        let inner = (range.lowerBound + 1)..<(range.upperBound - 1)
        // Escapes are rare in these names and values: the full reader takes them.
        if bytes[inner].contains(UInt8(ascii: "\\")) {
            guard case let .string(text) = try value(in: range) else { throw Malformed(offset: range.lowerBound) }
            return text
        }
        return String(decoding: bytes[inner], as: UTF8.self)
    }

    /// The value that `range` holds, read in full.
    func value(in range: Range<Int>) throws -> FieldValue {
        try FieldValue(jsonText: String(decoding: bytes[range], as: UTF8.self))
    }

    private func skipSpace(_ start: Int) -> Int {
        var i = start
        while i < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[i]) { i += 1 }
        return i
    }

    /// Where the value that starts at `start` ends.
    private func endOfValue(at start: Int) throws -> Int {
        guard start < bytes.count else { throw Malformed(offset: start) }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            var i = start + 1
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "\\"): i += 2
                case UInt8(ascii: "\""): return i + 1
                default: i += 1
                }
            }
            throw Malformed(offset: start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            // Brackets nest; strings inside may hold brackets, so they are stepped over whole.
            var depth = 0
            var i = start
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "\""): i = try endOfValue(at: i)
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return i + 1 }
                default: break
                }
                i += 1
            }
            throw Malformed(offset: start)
        default:
            // A number or a literal: up to the next delimiter.
            var i = start
            while i < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09].contains(bytes[i]) { i += 1 }
            guard i > start else { throw Malformed(offset: start) }
            return i
        }
    }
}
