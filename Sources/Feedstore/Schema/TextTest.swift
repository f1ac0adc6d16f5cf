import Foundation

/// How a string field is tested in an ``IndexCondition``: equal to, containing, starting or
/// ending with a text, optionally ignoring case and diacritics.
///
/// Unicode-correct: both sides are compared in canonical composition (NFC), so `"é"` written as
/// one scalar or as `e` + U+0301 is the same text, and matching respects character boundaries
/// (`"é"` does not contain `"e"` unless diacritics are ignored). Ignoring case applies Unicode
/// case folding (`"Straße"` equals `"STRASSE"`), ignoring diacritics removes combining marks
/// (`"café"` contains `"cafe"`); both are locale-independent. A value that is not a string
/// (or a missing field) passes no text test.
public struct TextTest: Sendable, Hashable, Codable {
    /// What the field's text must do with ``text``.
    public enum Match: String, Sendable, Hashable, Codable {
        case equals, contains, hasPrefix, hasSuffix
    }

    public var match: Match
    public var text: String
    public var caseInsensitive: Bool
    public var diacriticInsensitive: Bool

    public init(_ match: Match, _ text: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false) {
        self.match = match
        self.text = text
        self.caseInsensitive = caseInsensitive
        self.diacriticInsensitive = diacriticInsensitive
    }

    /// The field contains `text`.
    public static func contains(_ text: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false) -> TextTest {
        TextTest(.contains, text, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
    }

    /// The field starts with `text`.
    public static func hasPrefix(_ text: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false) -> TextTest {
        TextTest(.hasPrefix, text, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
    }

    /// The field ends with `text`.
    public static func hasSuffix(_ text: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false) -> TextTest {
        TextTest(.hasSuffix, text, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
    }

    /// The field equals `text` (use ``IndexCondition/compare(field:_:_:)`` for exact equality).
    public static func equals(_ text: String, caseInsensitive: Bool = false, diacriticInsensitive: Bool = false) -> TextTest {
        TextTest(.equals, text, caseInsensitive: caseInsensitive, diacriticInsensitive: diacriticInsensitive)
    }

    /// Whether `value` passes the test.
    public func holds(for value: FieldValue) -> Bool {
        guard case let .string(s) = value else { return false }
        return TextMatcher(self).matches(s)
    }

    /// The test as text, for messages: `contains "report" (ignoring case)`.
    var description: String {
        let options = [caseInsensitive ? "case" : nil, diacriticInsensitive ? "diacritics" : nil].compactMap { $0 }
        return "\(match.rawValue) \(FieldValue.string(text).jsonText)" + (options.isEmpty ? "" : " (ignoring \(options.joined(separator: " and ")))")
    }
}

/// A ``TextTest`` made ready to run on many values: its text folded once. Values whose bytes are
/// ASCII (without a carriage return, the one ASCII character that joins its neighbour into one
/// character) are tested byte by byte; others are folded and compared by characters.
struct TextMatcher {
    let test: TextTest
    /// The test's text, folded as the values are.
    private let folded: String
    /// `folded`'s bytes when they are all ASCII.
    private let asciiNeedle: [UInt8]?

    init(_ test: TextTest) {
        self.test = test
        folded = Self.fold(test.text, test)
        let bytes = Array(folded.utf8)
        asciiNeedle = Self.isPlainASCII(bytes) ? bytes : nil
    }

    /// `s` in canonical composition, with case and diacritics folded as the test asks.
    static func fold(_ s: String, _ test: TextTest) -> String {
        var options: String.CompareOptions = []
        if test.caseInsensitive { options.insert(.caseInsensitive) }
        if test.diacriticInsensitive { options.insert(.diacriticInsensitive) }
        let folded = options.isEmpty ? s : s.folding(options: options, locale: nil)
        return folded.precomposedStringWithCanonicalMapping
    }

    static func isPlainASCII<C: Collection<UInt8>>(_ bytes: C) -> Bool {
        bytes.allSatisfy { $0 < 0x80 && $0 != 0x0D }
    }

    func matches(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { matches(utf8: UnsafeRawBufferPointer($0)) }
    }

    /// Whether the string whose UTF-8 bytes are `utf8` passes.
    func matches(utf8: UnsafeRawBufferPointer) -> Bool {
        if Self.isPlainASCII(utf8) {
            // Folding leaves ASCII text ASCII (only lowering its case), so a needle that folded to
            // other characters cannot occur in it.
            guard let needle = asciiNeedle else { return false }
            return Self.asciiMatch(test.match, utf8, needle, lowering: test.caseInsensitive)
        }
        let value = Self.fold(String(decoding: utf8, as: UTF8.self), test)
        // Compared as characters: canonical equivalence, whole grapheme clusters.
        switch test.match {
        case .equals: return value == folded
        case .hasPrefix: return value.starts(with: folded)
        case .hasSuffix: return value.reversed().starts(with: folded.reversed())
        case .contains:
            if folded.isEmpty { return true }
            let haystack = Array(value), needle = Array(folded)
            guard needle.count <= haystack.count else { return false }
            for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
                if haystack[start..<(start + needle.count)].elementsEqual(needle) { return true }
            }
            return false
        }
    }

    private static func asciiMatch(_ match: TextTest.Match, _ value: UnsafeRawBufferPointer, _ needle: [UInt8], lowering: Bool) -> Bool {
        @inline(__always) func byte(_ b: UInt8) -> UInt8 { lowering && b >= 0x41 && b <= 0x5A ? b | 0x20 : b }
        let n = needle.count, h = value.count
        guard n <= h else { return false }
        func equal(at start: Int) -> Bool {
            for i in 0..<n where byte(value[start + i]) != needle[i] { return false }
            return true
        }
        switch match {
        case .equals: return n == h && equal(at: 0)
        case .hasPrefix: return equal(at: 0)
        case .hasSuffix: return equal(at: h - n)
        case .contains:
            if n == 0 { return true }
            let first = needle[0]
            for start in 0...(h - n) where byte(value[start]) == first {
                if equal(at: start) { return true }
            }
            return false
        }
    }
}
