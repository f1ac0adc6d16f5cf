extension ReadTransaction {
    /// Where a filtered query over a text index's every-record list (the empty word's range)
    /// finds its rows without testing every record: the entries of the word test of its filter
    /// with the fewest, which name every record that can pass (a record passes a word test only
    /// through a word the index holds for it). Several words of one record name it once.
    struct TextCandidates {
        /// The key range of the word test's entries.
        let keys: KeyRange
        /// How many entries the range holds (a record's words there count once each).
        let entries: Int
        /// Whether a candidate passes without its record being read: the filter is that one test,
        /// on the index's own fields.
        let passesWithoutTest: Bool
    }

    /// The candidates of `plain` filtered by `filter`, or nil when its filter has no word test
    /// the index answers, or `plain` is not a text index's every-record list.
    /// - Complexity: O(w log n) for w word tests.
    func textCandidates(of plain: ResolvedQuery, passing filter: RecordFilter) throws -> TextCandidates? {
        guard plain.index.isText, let words = plain.index.definition.words, plain.keys == Self.everyRecordKeys else { return nil }
        let tests: [(fields: [String], test: WordTest)]
        switch filter.condition {
        case let .words(fields, test): tests = [(fields, test)]
        case let .and(parts):
            tests = parts.compactMap { part in
                guard case let .words(fields, test) = part else { return nil }
                return (fields, test)
            }
        default: tests = []
        }
        var best: TextCandidates?
        for (fields, test) in tests where Set(fields).isSubset(of: words) {
            let keys = Self.keys(of: WordMatcher(test))
            let (start, end) = keys.isEmpty ? (0, 0) : try ranks(in: plain.index, from: keys.lower, to: keys.upper)
            let entries = max(0, end - start)
            if best.map({ entries < $0.entries }) ?? true {
                best = TextCandidates(keys: keys, entries: entries,
                                      passesWithoutTest: tests.count == 1 && filter.condition == .words(fields: fields, test)
                                          && Set(fields) == Set(words))
            }
        }
        return best
    }

    /// The every-record list's rows that pass `filter`, from `candidates`: each candidate's key
    /// under the empty word, in key order, kept when it passes.
    /// - Complexity: O(c log c) for c candidate entries, plus reading each candidate record
    ///   unless the filter is the one word test.
    func filteredOrder(of plain: ResolvedQuery, passing filter: RecordFilter, from candidates: TextCandidates) throws -> FilteredOrder {
        // The keys go into one buffer and are sorted by where they lie: no array per key.
        let empty = IndexSchema.wordKey("")
        var bytes: [UInt8] = [], starts: [Int] = [0]
        bytes.reserveCapacity(candidates.entries * 24)
        starts.reserveCapacity(candidates.entries + 1)
        try walkKeys(of: ResolvedQuery(entity: plain.entity, index: plain.index, keys: candidates.keys, start: 0, count: candidates.entries),
                     reverse: false, offset: 0, limit: nil) { key, _ in
            bytes.append(contentsOf: empty)
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: key[try KeyDecoder.lengthOfComponents(1, in: key)...]))
            starts.append(bytes.count)
        }
        let order = FilteredOrder()
        try bytes.withUnsafeBytes { buffer in
            func key(_ i: Int32) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[starts[Int(i)]..<starts[Int(i) + 1]]) }
            var sorted = (0..<Int32(starts.count - 1)).map { $0 }
            sorted.sort { key($0).compare(with: key($1)) < 0 }
            var previous: UnsafeRawBufferPointer?
            for i in sorted {
                let k = key(i)
                if let previous, previous.compare(with: k) == 0 { continue }
                previous = k
                if try candidates.passesWithoutTest || passes(filter, entryKey: k, of: plain) { order.append(k) }
            }
        }
        return order
    }

    /// The keys of a text index's every-record list: the empty word's entries.
    static let everyRecordKeys: KeyRange = {
        let prefix = IndexSchema.wordKey("")
        return KeyRange(lower: prefix, upper: KeyEncoding.successor(ofPrefix: prefix))
    }()

    /// The key range of the entries of the words `matcher` accepts: one word's entries, or every
    /// word's that starts with a prefix; empty when its text is not one word.
    static func keys(of matcher: WordMatcher) -> KeyRange {
        guard let word = matcher.folded else { return KeyRange(lower: nil, upper: nil, isEmpty: true) }
        var prefix = IndexSchema.wordKey(word)
        // A word's key ends with the string terminator (0x00 0x00); without it, the key is the
        // start of every word's that begins with these bytes (folded words hold no zero byte).
        if matcher.test.match == .hasPrefix { prefix.removeLast(2) }
        return KeyRange(lower: prefix, upper: KeyEncoding.successor(ofPrefix: prefix))
    }
}
