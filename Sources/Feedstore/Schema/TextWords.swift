/// How text is split into words and folded, for text indexes and word tests: one definition, so
/// that a query's words and a record's words always meet.
///
/// Splitting follows the word rules of Unicode's text segmentation (UAX #29), simplified:
/// - a word is a run of letters, digits and connectors (`_`), joined by letters next to digits
///   (`q3`, `2nd`);
/// - an apostrophe or a period between two letters stays in the word (`don't`, `e.g`), and a
///   period, comma or semicolon between two digits does (`3.14`, `1,000`); a colon separates;
/// - Katakana runs are one word; each Han ideograph, Hiragana and other character of a script
///   written without spaces is a word of its own (no dictionary segmentation);
/// - everything else (spaces, punctuation, symbols, emoji) separates words.
///
/// Folding: full Unicode case folding, diacritics removed, canonical composition (NFC), locale
/// independent, as ``TextTest`` does when it ignores case and diacritics (`"Straße"` → `"strasse"`,
/// `"Café"` → `"cafe"`). A folded word longer than ``maximumWordBytes`` UTF-8 bytes is kept as its
/// longest prefix of whole characters within that size, for records and queries alike.
enum TextWords {
    /// The longest folded word an index entry holds, in UTF-8 bytes.
    static let maximumWordBytes = 100

    /// The distinct folded words of `text`, in the order they first occur.
    static func words(in text: String) -> [String] {
        var found: [String] = []
        var seen = Set<String>()
        forEachWord(in: text) { word in
            if seen.insert(word).inserted { found.append(word) }
        }
        return found
    }

    /// Each folded word of `text` in order, repeats included.
    static func forEachWord(in text: String, _ body: (String) -> Void) {
        var text = text
        let ascii = text.withUTF8 { utf8 -> Bool in
            guard utf8.allSatisfy({ $0 < 0x80 }) else { return false }
            asciiWords(utf8, body)
            return true
        }
        if !ascii { unicodeWords(text, body) }
    }

    /// `word` folded as words are, or nil when it is not exactly one word: what a query names.
    static func folded(word: String) -> String? {
        let words = words(in: word)
        return words.count == 1 ? words[0] : nil
    }

    // MARK: Classes of characters

    enum Kind: Equatable {
        case letter, digit, connector, katakana, ideograph
        /// Keeps a word between two letters (apostrophe, period between letters).
        case midLetter
        /// Keeps a word between two digits (comma, semicolon).
        case midNumber
        /// Keeps a word between two letters or two digits (period, apostrophe, right quote).
        case midBoth
        case separator

        var startsOrExtends: Bool { self == .letter || self == .digit || self == .connector || self == .katakana }
    }

    static func kind(of character: Character) -> Kind {
        guard let scalar = character.unicodeScalars.first else { return .separator }
        switch scalar.value {
        case 0x5F: return .connector
        case 0x27, 0x2E, 0x2019, 0x2018, 0x2024, 0xFE52, 0xFF07, 0xFF0E: return .midBoth
        case 0xB7, 0x387, 0x55F, 0x5F4, 0x2027, 0xFE13, 0xFE55: return .midLetter
        case 0x2C, 0x3B, 0x37E, 0x589, 0x60C, 0x60D, 0x66C, 0x7F8, 0x2044, 0xFE10, 0xFE14, 0xFE50, 0xFE54, 0xFF0C, 0xFF1B: return .midNumber
        default: break
        }
        let properties = scalar.properties
        switch properties.generalCategory {
        case .decimalNumber, .letterNumber, .otherNumber: return .digit
        case .connectorPunctuation: return .connector
        default: break
        }
        guard properties.isAlphabetic else { return .separator }
        if properties.isIdeographic { return .ideograph }
        switch scalar.value {
        case 0x30A0...0x30FF, 0x31F0...0x31FF, 0x32D0...0x32FE, 0x3300...0x3357, 0xFF66...0xFF9F: return .katakana
        case 0x3040...0x309F, 0x0E00...0x0EFF, 0x1000...0x109F, 0x1780...0x17FF, 0x1B000...0x1B16F: return .ideograph
        default: return .letter
        }
    }

    /// Whether two neighbouring characters of kinds `a` and `b` belong to one word.
    private static func joins(_ a: Kind, _ b: Kind) -> Bool {
        switch (a, b) {
        case (.katakana, .katakana), (.connector, _) where b.startsOrExtends, (_, .connector) where a.startsOrExtends: true
        case (.letter, .letter), (.letter, .digit), (.digit, .letter), (.digit, .digit): true
        default: false
        }
    }

    /// Whether a middle character of kind `mid` between kinds `a` and `b` keeps them one word.
    private static func bridges(_ a: Kind, _ mid: Kind, _ b: Kind) -> Bool {
        switch mid {
        case .midLetter: a == .letter && b == .letter
        case .midNumber: a == .digit && b == .digit
        case .midBoth: (a == .letter && b == .letter) || (a == .digit && b == .digit)
        default: false
        }
    }

    // MARK: Splitting

    private static func unicodeWords(_ text: String, _ body: (String) -> Void) {
        let characters = Array(text)
        let kinds = characters.map(kind(of:))
        var start: Int?
        var i = 0
        func end(at e: Int) {
            if let s = start { emit(String(characters[s..<e]), body) }
            start = nil
        }
        while i < characters.count {
            let k = kinds[i]
            if k == .ideograph {
                end(at: i)
                emit(String(characters[i]), body)
            } else if k.startsOrExtends {
                if start != nil, !joins(kinds[i - 1], k) { end(at: i) }
                if start == nil { start = i }
            } else if start != nil, i + 1 < characters.count, bridges(kinds[i - 1], k, kinds[i + 1]) {
                // The middle character and the next stay in the word.
                i += 2
                continue
            } else {
                end(at: i)
            }
            i += 1
        }
        end(at: characters.count)
    }

    /// The same rules on ASCII text, byte by byte (the classes ASCII characters have above).
    private static func asciiWords(_ utf8: UnsafeBufferPointer<UInt8>, _ body: (String) -> Void) {
        @inline(__always) func kind(_ b: UInt8) -> Kind {
            switch b {
            case 0x41...0x5A, 0x61...0x7A: .letter
            case 0x30...0x39: .digit
            case 0x5F: .connector
            case 0x27, 0x2E: .midBoth
            case 0x2C, 0x3B: .midNumber
            default: .separator
            }
        }
        var start: Int?
        var i = 0
        let n = utf8.count
        func end(at e: Int) {
            if let s = start {
                var word = [UInt8](UnsafeBufferPointer(rebasing: utf8[s..<e]))
                for j in word.indices where word[j] >= 0x41 && word[j] <= 0x5A { word[j] |= 0x20 }
                if word.count > maximumWordBytes { word.removeLast(word.count - maximumWordBytes) }
                body(String(decoding: word, as: UTF8.self))
            }
            start = nil
        }
        while i < n {
            let k = kind(utf8[i])
            if k.startsOrExtends {
                if start != nil, !joins(kind(utf8[i - 1]), k) { end(at: i) }
                if start == nil { start = i }
            } else if start != nil, i + 1 < n, bridges(kind(utf8[i - 1]), k, kind(utf8[i + 1])) {
                i += 2
                continue
            } else {
                end(at: i)
            }
            i += 1
        }
        end(at: n)
    }

    private static let folding = TextTest(.equals, "", caseInsensitive: true, diacriticInsensitive: true)

    private static func emit(_ word: String, _ body: (String) -> Void) {
        let folded = TextMatcher.fold(word, folding)
        guard !folded.isEmpty else { return }
        body(keptPrefix(of: folded))
    }

    /// `word` cut to at most ``maximumWordBytes`` UTF-8 bytes of whole characters.
    static func keptPrefix(of word: String) -> String {
        guard word.utf8.count > maximumWordBytes else { return word }
        var kept = "", size = 0
        for character in word {
            size += character.utf8.count
            if size > maximumWordBytes { break }
            kept.append(character)
        }
        return kept
    }
}
