/// How the words of text fields are tested in an ``IndexCondition``: one of them equals a word,
/// or starts with a prefix, both folded (case and diacritics ignored) and split as ``TextIndex``
/// splits text (see <doc:SearchingByWords>). A field that is not text (or is missing) has no words.
public struct WordTest: Sendable, Hashable, Codable {
    /// What one of the fields' words must do with ``word``.
    public enum Match: String, Sendable, Hashable, Codable {
        /// A word equals it.
        case equals = "word"
        /// A word starts with it.
        case hasPrefix = "wordPrefix"
    }

    public var match: Match
    /// The word, as given; tests compare it folded.
    public var word: String

    public init(_ match: Match, _ word: String) {
        self.match = match
        self.word = word
    }

    /// The test as text, for messages: `has the word "report"`.
    var description: String {
        (match == .equals ? "has the word " : "has a word starting with ") + FieldValue.string(word).jsonText
    }
}

/// A ``WordTest`` made ready to run on many values: its word folded once.
struct WordMatcher {
    let test: WordTest
    /// The word folded as the words of values are; nil when the test's text is not one word
    /// (only separators, or several words), which no value's word passes.
    let folded: String?

    init(_ test: WordTest) {
        self.test = test
        folded = TextWords.folded(word: test.word)
    }

    /// Whether one of the words of `text` passes.
    func matches(_ text: String) -> Bool {
        guard let folded else { return false }
        var found = false
        TextWords.forEachWord(in: text) { word in
            if !found { found = test.match == .equals ? word == folded : word.utf8.starts(with: folded.utf8) }
        }
        return found
    }
}
