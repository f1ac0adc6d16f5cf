/// A search by words in a text index: every word of ``text`` must be one of a record's words,
/// and with ``lastWordIsPrefix``, the last may be the start of one (a search field as the user
/// types: `"quarterly rep"` finds "Quarterly report"). A text that ends with a space or other
/// separator has no prefix: the user finished the word. A text with no words lists every record.
public struct TextSearch: Sendable, Hashable {
    public var text: String
    public var lastWordIsPrefix: Bool

    public init(_ text: String, lastWordIsPrefix: Bool = false) {
        self.text = text
        self.lastWordIsPrefix = lastWordIsPrefix
    }

    /// The range of the text index `index` and the filter that answer the search: one exact word
    /// is that word's range (counted, like any index range, with no filter); otherwise the list of
    /// every record, filtered by a word test per word (whose rarest word's entries name the
    /// candidates; <doc:SearchingByWords>).
    public func query(on index: IndexDefinition) -> (range: IndexRange, filter: IndexCondition?) {
        let fields = index.words ?? []
        var words: [String] = []
        TextWords.forEachWord(in: text) { if !words.contains($0) { words.append($0) } }
        let endsInWord = text.last.map { TextWords.kind(of: $0).startsOrExtends } ?? false
        let prefixLast = lastWordIsPrefix && endsInWord && !words.isEmpty
        if words.count == 1 && !prefixLast { return (.prefix(.string(words[0])), nil) }
        let tests = words.enumerated().map { i, word -> IndexCondition in
            .words(fields: fields, WordTest(prefixLast && i == words.count - 1 ? .hasPrefix : .equals, word))
        }
        switch tests.count {
        case 0: return (.prefix(.string("")), nil)
        case 1: return (.prefix(.string("")), tests[0])
        default: return (.prefix(.string("")), .and(tests))
        }
    }
}
