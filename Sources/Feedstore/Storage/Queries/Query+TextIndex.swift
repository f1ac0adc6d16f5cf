/// Queries on text indexes (``TextIndex``): records by their words, in the index's order.
extension Query {
    /// Every record of the text index's entity (that its condition admits), in the index's order.
    public init(_ index: TextIndex<E>, reverse: Bool = false) {
        self.init(E.self, index: index.name, range: .prefix(.string("")), reverse: reverse)
    }

    /// The records one of whose words is `word` (folded; <doc:SearchingByWords>): the word's range of
    /// the index, whose counts, positions and windows cost O(log n) like any index range's. A
    /// `word` of several words is ``init(_:words:lastWordIsPrefix:reverse:)``.
    public init(_ index: TextIndex<E>, word: String, reverse: Bool = false) {
        self.init(index, words: word, reverse: reverse)
    }

    /// The records one of whose words starts with `prefix` (folded), each once however many of
    /// its words do.
    public init(_ index: TextIndex<E>, wordPrefix prefix: String, reverse: Bool = false) {
        self.init(index, words: prefix, lastWordIsPrefix: true, reverse: reverse)
    }

    /// The records that have every word of `words`, the last perhaps as a prefix
    /// (``TextSearch``): `Query(Message.byText, words: "quarterly rep", lastWordIsPrefix: true)`.
    public init(_ index: TextIndex<E>, words: String, lastWordIsPrefix: Bool = false, reverse: Bool = false) {
        let (range, filter) = TextSearch(words, lastWordIsPrefix: lastWordIsPrefix).query(on: index.definition)
        self.init(E.self, index: index.name, range: range, reverse: reverse, filter: filter)
    }
}
