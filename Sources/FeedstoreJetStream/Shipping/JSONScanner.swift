import Feedstore
import Foundation

/// Finds the members of JSON objects and the elements of arrays without building their values,
/// so that a reader of envelopes parses only the values it uses (a replica reads an entry's
/// exact `stored` record and skips its `after` and `indexKeys`). Every commit a replica applies
/// passes through here, so it walks raw bytes and makes no dictionary or string it does not need.
struct JSONScanner {
    let bytes: [UInt8]

    struct Malformed: Error, CustomStringConvertible {
        var offset: Int
        var description: String { "malformed JSON at byte \(offset)" }
    }

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The members of an object: where each name and each value lies. Looked up by name with
    /// a walk over a handful of members, which costs less than hashing their names.
    struct Members {
        fileprivate let scanner: JSONScanner
        /// Each member's name (quotes included) and value.
        fileprivate var members: [(name: Range<Int>, value: Range<Int>)] = []

        /// The range of the value of member `name`; the last one when the name repeats, as a
        /// dictionary built from the object would keep.
        subscript(name: String) -> Range<Int>? {
            for member in members.reversed() where scanner.name(member.name, is: name) { return member.value }
            return nil
        }
    }

    /// The members of the object that `range` holds.
    func members(of range: Range<Int>) throws -> Members {
        try bytes.withUnsafeBufferPointer { b in
            try members(b, at: Self.skipSpace(b, range.lowerBound), before: range.upperBound, expanding: nil).members
        }
    }

    /// The members of the object that `range` holds, and those of each element of the array that
    /// its member `name` holds (every element an object; nil without the member): one walk over
    /// the text, where finding the members first and then the array's would take two.
    func members(of range: Range<Int>, withObjectsIn name: String) throws -> (Members, [Members]?) {
        try bytes.withUnsafeBufferPointer { b in
            let found = try members(b, at: Self.skipSpace(b, range.lowerBound), before: range.upperBound, expanding: name)
            return (found.members, found.objects)
        }
    }

    /// The members of the object that opens at `start`, where it ends, and the objects of the
    /// array its member `expanding` holds.
    private func members(_ b: UnsafeBufferPointer<UInt8>, at start: Int, before limit: Int, expanding: String?)
        throws -> (members: Members, end: Int, objects: [Members]?)
    {
        var found = Members(scanner: self)
        found.members.reserveCapacity(8)
        var objects: [Members]?
        var i = start
        guard i < limit, b[i] == UInt8(ascii: "{") else { throw Malformed(offset: i) }
        i = Self.skipSpace(b, i + 1)
        if i < limit, b[i] == UInt8(ascii: "}") { return (found, i + 1, nil) }
        while true {
            guard i < limit, b[i] == UInt8(ascii: "\"") else { throw Malformed(offset: i) }
            let nameEnd = try Self.endOfString(b, at: i)
            let name = i..<nameEnd
            i = Self.skipSpace(b, nameEnd)
            guard i < limit, b[i] == UInt8(ascii: ":") else { throw Malformed(offset: i) }
            let valueStart = Self.skipSpace(b, i + 1)
            let valueEnd: Int
            if let expanding, self.name(name, is: expanding) {
                // A repeated name: the last one counts, as for every member.
                objects = nil
                if valueStart < limit, b[valueStart] == UInt8(ascii: "[") {
                    let array = try self.objects(b, at: valueStart, before: limit)
                    (objects, valueEnd) = (array.objects, array.end)
                } else {
                    valueEnd = try Self.endOfValue(b, at: valueStart)
                }
            } else {
                valueEnd = try Self.endOfValue(b, at: valueStart)
            }
            guard valueEnd <= limit else { throw Malformed(offset: valueStart) }
            found.members.append((name, valueStart..<valueEnd))
            i = Self.skipSpace(b, valueEnd)
            guard i < limit else { throw Malformed(offset: i) }
            if b[i] == UInt8(ascii: "}") { return (found, i + 1, objects) }
            guard b[i] == UInt8(ascii: ",") else { throw Malformed(offset: i) }
            i = Self.skipSpace(b, i + 1)
        }
    }

    /// The members of each element of the array that opens at `start`, every element an object,
    /// and where the array ends.
    private func objects(_ b: UnsafeBufferPointer<UInt8>, at start: Int, before limit: Int) throws -> (objects: [Members], end: Int) {
        var i = start
        guard i < limit, b[i] == UInt8(ascii: "[") else { throw Malformed(offset: i) }
        i = Self.skipSpace(b, i + 1)
        var found: [Members] = []
        if i < limit, b[i] == UInt8(ascii: "]") { return (found, i + 1) }
        while true {
            let object = try members(b, at: i, before: limit, expanding: nil)
            found.append(object.members)
            i = Self.skipSpace(b, object.end)
            guard i < limit else { throw Malformed(offset: i) }
            if b[i] == UInt8(ascii: "]") { return (found, i + 1) }
            guard b[i] == UInt8(ascii: ",") else { throw Malformed(offset: i) }
            i = Self.skipSpace(b, i + 1)
        }
    }

    /// The members of each element of the array that `range` holds, every element an object.
    func objects(inArray range: Range<Int>) throws -> [Members] {
        try bytes.withUnsafeBufferPointer { b in try objects(b, at: Self.skipSpace(b, range.lowerBound), before: range.upperBound).objects }
    }

    /// Whether `range` holds `null`.
    func isNull(_ range: Range<Int>) -> Bool {
        range.count == 4 && bytes[range.lowerBound] == UInt8(ascii: "n") && bytes[range.lowerBound + 1] == UInt8(ascii: "u")
            && bytes[range.lowerBound + 2] == UInt8(ascii: "l") && bytes[range.lowerBound + 3] == UInt8(ascii: "l")
    }

    /// Whether the JSON string at `range` (quotes included) is `name`.
    fileprivate func name(_ range: Range<Int>, is name: String) -> Bool {
        let inner = (range.lowerBound + 1)..<(range.upperBound - 1)
        // Compared as bytes, lengths first: most members looked past differ in length.
        let wanted = name.utf8
        if inner.count == wanted.count {
            let same: Bool? = wanted.withContiguousStorageIfAvailable { (wanted: UnsafeBufferPointer<UInt8>) -> Bool in
                bytes.withUnsafeBufferPointer { b in wanted.isEmpty || memcmp(b.baseAddress! + inner.lowerBound, wanted.baseAddress!, wanted.count) == 0 }
            }
            if same ?? bytes[inner].elementsEqual(wanted) { return true }
        }
        // A name written with escapes is read in full; a plain one that differs is another name.
        return bytes[inner].contains(UInt8(ascii: "\\")) && (try? string(in: range)) == name
    }

    /// The string that `range` holds (a JSON string, quotes included).
    func string(in range: Range<Int>) throws -> String {
        guard range.count >= 2, bytes[range.lowerBound] == UInt8(ascii: "\""), bytes[range.upperBound - 1] == UInt8(ascii: "\"") else {
            throw Malformed(offset: range.lowerBound)
        }
        let inner = (range.lowerBound + 1)..<(range.upperBound - 1)
        // Escapes and control characters are rare in these names and values: the full reader
        // takes them (and refuses what JSON does not allow).
        if bytes[inner].contains(where: { $0 == UInt8(ascii: "\\") || $0 < 0x20 }) {
            guard case let .string(text) = try value(in: range) else { throw Malformed(offset: range.lowerBound) }
            return text
        }
        return String(decoding: bytes[inner], as: UTF8.self)
    }

    /// The bytes that the JSON string at `range` (quotes included) spells in base64, padded, read
    /// without making the string first; nil when it holds anything else (escapes included: the
    /// caller then reads the string in full).
    func base64(in range: Range<Int>) -> [UInt8]? {
        guard range.count >= 2, bytes[range.lowerBound] == UInt8(ascii: "\""), bytes[range.upperBound - 1] == UInt8(ascii: "\"") else { return nil }
        return bytes.withUnsafeBufferPointer { b in
            Base64.decode(UnsafeBufferPointer(rebasing: b[(range.lowerBound + 1)..<(range.upperBound - 1)]))
        }
    }

    /// The unsigned integer that `range` holds, written in plain digits; nil for anything else.
    func unsigned(in range: Range<Int>) -> UInt64? {
        guard !range.isEmpty, range.count <= 19, bytes[range.lowerBound] != UInt8(ascii: "0") || range.count == 1 else { return nil }
        var value: UInt64 = 0
        for byte in bytes[range] {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + UInt64(digit)
        }
        return value
    }

    /// The value that `range` holds, read in full. Plain integers and strings without escapes,
    /// the common ids, are read directly, as ``FieldValue/init(jsonText:)`` reads them.
    func value(in range: Range<Int>) throws -> FieldValue {
        if let first = range.first.map({ bytes[$0] }) {
            if first == UInt8(ascii: "-"), let magnitude = unsigned(in: (range.lowerBound + 1)..<range.upperBound), magnitude <= UInt64(Int64.max) {
                return .int(-Int64(magnitude))
            }
            if let value = unsigned(in: range) { return value <= UInt64(Int64.max) ? .int(Int64(value)) : .uint(value) }
            if first == UInt8(ascii: "\""), range.count >= 2, bytes[range.upperBound - 1] == UInt8(ascii: "\""),
               !bytes[(range.lowerBound + 1)..<(range.upperBound - 1)].contains(where: { $0 == UInt8(ascii: "\\") || $0 < 0x20 || $0 >= 0x80 })
            {
                return .string(String(decoding: bytes[(range.lowerBound + 1)..<(range.upperBound - 1)], as: UTF8.self))
            }
        }
        return try FieldValue(jsonText: String(decoding: bytes[range], as: UTF8.self))
    }

    private static func skipSpace(_ b: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
        var i = start
        while i < b.count, isSpace(b[i]) { i += 1 }
        return i
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    /// Where the value that starts at `start` ends.
    private static func endOfValue(_ b: UnsafeBufferPointer<UInt8>, at start: Int) throws -> Int {
        guard start < b.count else { throw Malformed(offset: start) }
        switch b[start] {
        case UInt8(ascii: "\""):
            return try endOfString(b, at: start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            // Brackets nest; strings inside may hold brackets, so they are stepped over whole.
            var depth = 0
            var i = start
            while i < b.count {
                switch b[i] {
                case UInt8(ascii: "\""):
                    i = try endOfString(b, at: i)
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
            while i < b.count {
                let byte = b[i]
                if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") || isSpace(byte) { break }
                i += 1
            }
            guard i > start else { throw Malformed(offset: start) }
            return i
        }
    }

    /// Where the string that opens at `start` ends (after its closing quote).
    private static func endOfString(_ b: UnsafeBufferPointer<UInt8>, at start: Int) throws -> Int {
        var i = start + 1
        while i < b.count {
            switch b[i] {
            case UInt8(ascii: "\\"): i += 2
            case UInt8(ascii: "\""): return i + 1
            default: i += 1
            }
        }
        throw Malformed(offset: start)
    }
}
