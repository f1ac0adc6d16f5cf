@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Text indexes: how words are split and folded, and every word's, prefix's and several words'
/// list (counts, positions, rows at positions, windows, both directions) against a brute-force
/// scan of the records after seeded inserts, retitles (words gained and lost), date changes and
/// deletes; the index checked by `verify` after each round; and live lists that records enter
/// when they gain a word and leave when they lose it.
@Suite(.blocking) struct TextIndexTests {
    struct Note: Entity, Equatable {
        var id: UInt64
        var date: Date
        var title: String
        var body: String?

        static let byText = textIndex(\.title, \.body, order: \.date.descending)
        static let byTitleWords = textIndex(named: "titleWords", \.title, order: \.id)
        static let indexes = [byText.definition, byTitleWords.definition]
    }

    // MARK: Words

    @Test func wordsAreSplitAndFoldedAsDocumented() {
        let cases: [(String, [String])] = [
            ("Hello, World!", ["hello", "world"]),
            ("Don't stop: e.g. 3.14 and 1,000", ["don't", "stop", "e.g", "3.14", "and", "1,000"]),
            ("re:report Q3-review snake_case", ["re", "report", "q3", "review", "snake_case"]),
            ("Straße STRASSE naïve Café cafe\u{301}", ["strasse", "naive", "cafe"]),
            ("東京タワー ｶﾀｶﾅ", ["東", "京", "タワー", "ｶﾀｶﾅ"]),
            ("😀 emoji… end.", ["emoji", "end"]),
            ("trailing' quote 'lead", ["trailing", "quote", "lead"]),
            ("", []),
            ("  ,;:  ", []),
        ]
        for (text, words) in cases {
            #expect(TextWords.words(in: text) == words, "\(text)")
        }
        let long = String(repeating: "é", count: 80)
        #expect(TextWords.words(in: long) == [String(repeating: "e", count: 80)])
        let longer = String(repeating: "ab", count: 80)
        #expect(TextWords.words(in: longer) == [String(longer.prefix(TextWords.maximumWordBytes))])
        #expect(TextWords.keptPrefix(of: String(repeating: "ü", count: 60)).utf8.count == 100)
    }

    /// ASCII text is split byte by byte; the same text split by characters (a non-ASCII
    /// separator appended sends it there) gives the same words.
    @Test(arguments: testSeeds(3))
    func asciiAndUnicodeSplittingAgree(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let alphabet = Array("aZ09_'.,;: -\n\t!?q")
        for round in 0..<2_000 {
            let text = String((0..<Int.random(in: 0...24, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
            var ascii: [String] = [], unicode: [String] = []
            TextWords.forEachWord(in: text) { ascii.append($0) }
            TextWords.forEachWord(in: text + "\u{2014}") { unicode.append($0) }
            #expect(ascii == unicode, "seed \(seed) round \(round): \(text.debugDescription)")
        }
    }

    // MARK: Lists against a brute-force scan

    static let vocabulary = ["Report", "report", "RÉPORT", "reply", "rep", "Q3", "café", "Cafe", "Straße", "STRASSE", "東京",
                             "don't", "3.14", "naïve", "review", "re", "lunch"]
    static let separators = [" ", ", ", "-", ": ", "\n", " — "]

    static func text(_ rng: inout SeededGenerator) -> String {
        (0..<Int.random(in: 0...4, using: &rng)).map { _ in vocabulary.randomElement(using: &rng)! }
            .joined(separator: separators.randomElement(using: &rng)!)
    }

    static func note(_ id: UInt64, _ rng: inout SeededGenerator) -> Note {
        Note(id: id, date: Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0..<200, using: &rng))), title: text(&rng),
             body: Bool.random(using: &rng) ? nil : text(&rng))
    }

    /// Writes notes 1 through `count`, random; returns them by id.
    static func populate(_ store: Store, notes count: Int, _ rng: inout SeededGenerator) throws -> [UInt64: Note] {
        let notes = (1...count).map { note(UInt64($0), &rng) }
        try store.write { tx in for note in notes { try tx.put(note) } }
        return Dictionary(uniqueKeysWithValues: notes.map { ($0.id, $0) })
    }

    /// The records that pass `search` on `fields`, in the index's order, found by splitting every
    /// record's text anew.
    static func expected(_ notes: [Note], _ search: TextSearch, byDate: Bool, titleOnly: Bool) -> [UInt64] {
        var words: [String] = []
        TextWords.forEachWord(in: search.text) { words.append($0) }
        let prefixLast = search.lastWordIsPrefix && (search.text.last.map { TextWords.kind(of: $0).startsOrExtends } ?? false) && !words.isEmpty
        let passing = notes.filter { note in
            let have = Set(TextWords.words(in: note.title) + (titleOnly ? [] : TextWords.words(in: note.body ?? "")))
            return words.enumerated().allSatisfy { i, word in
                prefixLast && i == words.count - 1 ? have.contains { $0.hasPrefix(word) } : have.contains(word)
            }
        }
        let sorted = byDate ? passing.sorted { ($0.date, $1.id) > ($1.date, $0.id) } : passing.sorted { $0.id < $1.id }
        return sorted.map(\.id)
    }

    static let searches: [TextSearch] = vocabulary.map { TextSearch($0) } + ["r", "re", "rep", "ca", "q", "st", "東", "don", "3."].map {
        TextSearch($0, lastWordIsPrefix: true)
    } + [TextSearch("report review"), TextSearch("lunch re", lastWordIsPrefix: true), TextSearch("cafe STRASSE q", lastWordIsPrefix: true),
         TextSearch("report ", lastWordIsPrefix: true), TextSearch(""), TextSearch("report, nothing"), TextSearch("—")]

    @Test(arguments: testSeeds(TestSize.choose(quick: 3, long: 10)))
    func everyListAgreesWithABruteForceScan(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Note.self], options: StoreOptions(durability: .none))
            defer { store.close() }
            var rng = SeededGenerator(seed: seed)
            var notes = try Self.populate(store, notes: 200, &rng)
            for round in 0..<8 {
                try store.write { tx in
                    for _ in 0..<30 {
                        let id = UInt64.random(in: 1...260, using: &rng)
                        switch Int.random(in: 0..<5, using: &rng) {
                        case 0:
                            notes[id] = nil
                            try tx.delete(Note.self, id: id)
                        case 1:
                            guard var note = notes[id] else { continue }
                            note.date = Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0..<200, using: &rng)))
                            notes[id] = note
                            try tx.put(note)
                        case 2:
                            guard var note = notes[id] else { continue }
                            note.body = nil
                            notes[id] = note
                            try tx.put(note)
                        default:
                            var note = notes[id] ?? Self.note(id, &rng)
                            note.title = Self.text(&rng)
                            notes[id] = note
                            try tx.put(note)
                        }
                    }
                }
                #expect(try store.verify().isEmpty, "seed \(seed) round \(round): verify")
                let all = Array(notes.values)
                for search in Self.searches {
                    for (index, byDate, titleOnly) in [(Note.byText, true, false), (Note.byTitleWords, false, true)] {
                        let want = Self.expected(all, search, byDate: byDate, titleOnly: titleOnly)
                        let (range, filter) = search.query(on: index.definition)
                        for reverse in [false, true] {
                            let query = Query<Note>(index: index.name, range: range, reverse: reverse, filter: filter)
                            let ids = reverse ? Array(want.reversed()) : want
                            let context = "seed \(seed) round \(round) \(index.name) \(search) reverse \(reverse)"
                            try checkList(query, ids, in: store, rng: &rng, context)
                        }
                    }
                }
            }
        }
    }

    /// A query's reads in a fresh transaction: a window first (before anything counted it),
    /// then the count, every row, rows at positions, positions of ids, and windows again.
    private func checkList(_ query: Query<Note>, _ ids: [UInt64], in store: Store, rng: inout SeededGenerator, _ context: String) throws {
        let offset = Int.random(in: 0...max(0, ids.count / 2), using: &rng), limit = Int.random(in: 1...12, using: &rng)
        let window = Array(ids.dropFirst(offset).prefix(limit))
        let probes = (0..<6).map { _ in Int.random(in: -1...ids.count, using: &rng) }
        let idProbes = (0..<6).map { _ in UInt64.random(in: 1...260, using: &rng) }
        try store.read { tx throws in
            #expect(try tx.objects(in: query, offset: offset, limit: limit).map(\.id) == window, "\(context): window before counting")
            #expect(try tx.count(query) == ids.count, "\(context): count")
            #expect(try tx.objects(in: query).map(\.id) == ids, "\(context): rows")
            for position in probes {
                let want = ids.indices.contains(position) ? ids[position] : nil
                #expect(try tx.object(at: position, in: query)?.id == want, "\(context): object(at: \(position))")
            }
            for id in idProbes {
                #expect(try tx.position(of: id, in: query) == ids.firstIndex(of: id), "\(context): position(of: \(id))")
            }
            #expect(try tx.objects(in: query, offset: offset, limit: limit).map(\.id) == window, "\(context): window after counting")
        }
    }

    /// A word's list is its range of the index: counted, and read without a filter.
    @Test func oneWordIsARangeOfTheIndex() throws {
        let (range, filter) = TextSearch("Report").query(on: Note.byText.definition)
        #expect(range == .prefix(.string("report")) && filter == nil)
        let query = Query(Note.byText, word: "RÉPORT")
        #expect(query.range == .prefix(.string("report")) && query.filter == nil)
        #expect(Query(Note.byText, wordPrefix: "Rep").filter == .words(fields: ["title", "body"], WordTest(.hasPrefix, "rep")))
    }

    // MARK: Live lists

    /// Word and prefix watchers, objects and indexes only: after each commit (retitles that add
    /// and remove words, new dates, deletes) the mirror equals a fresh query; a note that gains
    /// the word enters the list, one that loses it leaves.
    @Test(arguments: testSeeds(TestSize.choose(quick: 2, long: 6)))
    func watchedListsFollowWordsGainedAndLost(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Note.self], options: StoreOptions(durability: .none))
            defer { store.close() }
            var rng = SeededGenerator(seed: seed)
            var notes = try Self.populate(store, notes: 120, &rng)
            let queries: [(String, Query<Note>, WatchOptions)] = [
                ("word", Query(Note.byText, word: "report"), WatchOptions()),
                ("prefix", Query(Note.byText, wordPrefix: "re"), WatchOptions()),
                ("two words, windowed", Query(Note.byText, words: "cafe st", lastWordIsPrefix: true), WatchOptions(window: WatchWindow(offset: 1, limit: 5))),
                ("prefix reversed, windowed", Query(Note.byText, wordPrefix: "q", reverse: true), WatchOptions(window: WatchWindow(offset: 0, limit: 6))),
            ]
            for (name, query, options) in queries {
                let watcher = store.watch(query, options: options)
                let indexes = store.watchIndexes(query, options: options)
                defer {
                    watcher.cancel()
                    indexes.cancel()
                }
                var mirror = SectionedMirror<Note>(), indexMirror = SectionedMirror<Note>()
                func follow(_ context: String) throws {
                    if let batch = try watcher.poll() { try mirror.apply(batch) }
                    if let batch = try indexes.poll() { try indexMirror.apply(batch, reading: indexes.object(at:)) }
                    let window = options.window ?? WatchWindow(offset: 0, limit: .max)
                    let want = try store.read { tx in try tx.objects(in: query, offset: window.offset, limit: window.limit) }
                    #expect(mirror.sections.flatMap(\.rows) == want, "\(context)")
                    #expect(indexMirror.sections.flatMap(\.rows) == want, "\(context), indexes only")
                }
                try follow("seed \(seed) \(name) initial")
                for commit in 0..<30 {
                    try store.write { tx in
                        for _ in 0..<Int.random(in: 1...4, using: &rng) {
                            let id = UInt64.random(in: 1...140, using: &rng)
                            if Int.random(in: 0..<6, using: &rng) == 0 {
                                notes[id] = nil
                                try tx.delete(Note.self, id: id)
                                continue
                            }
                            var note = notes[id] ?? Self.note(id, &rng)
                            if Bool.random(using: &rng) { note.title = Self.text(&rng) } else {
                                note.date = Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0..<200, using: &rng)))
                            }
                            notes[id] = note
                            try tx.put(note)
                        }
                    }
                    try follow("seed \(seed) \(name) commit \(commit)")
                }
            }
        }
    }

    @Test func aNoteThatGainsTheWordEntersTheListAndLeavesWhenItLosesIt() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Note.self], options: StoreOptions(durability: .none))
            defer { store.close() }
            let day = { (d: Double) in Date(timeIntervalSinceReferenceDate: d * 86_400) }
            try store.write { tx in
                try tx.put(Note(id: 1, date: day(3), title: "Quarterly report"))
                try tx.put(Note(id: 2, date: day(2), title: "Lunch plans"))
                try tx.put(Note(id: 3, date: day(1), title: "Reports, reviewed", body: "report attached"))
            }
            let watcher = store.watch(Query(Note.byText, word: "report"))
            defer { watcher.cancel() }
            #expect(try watcher.poll()?.inserts.map(\.path.row) == [0, 1])
            try store.write { tx in try tx.put(Note(id: 2, date: day(2), title: "Lunch report")) }
            let entered = try #require(try watcher.poll())
            #expect(entered.inserts.map(\.path.row) == [1] && entered.inserts.map(\.value.id) == [2] && entered.deletes.isEmpty)
            try store.write { tx in try tx.put(Note(id: 1, date: day(3), title: "Quarterly summary")) }
            let left = try #require(try watcher.poll())
            #expect(left.deletes.map(\.path.row) == [0] && left.inserts.isEmpty)
            // A word's second occurrence (title and body) is one row.
            #expect(try store.read { try $0.count(Query(Note.byText, word: "report")) } == 2)
        }
    }

    // MARK: Declarations and filters

    @Test func aTextIndexAddedToAStoreIsBuiltFromItsRecords() throws {
        struct Plain: Entity {
            var id: UInt64
            var date: Date
            var title: String
            var body: String?
            static let entityName = "Note"
        }
        try withTemporaryDirectory { dir in
            let plain = try Store(path: dir + "/s", entities: [Plain.self], options: StoreOptions(durability: .none))
            var rng = SeededGenerator(seed: 9)
            var notes: [Note] = []
            try plain.write { tx in
                for id in 1...150 {
                    let note = Self.note(UInt64(id), &rng)
                    notes.append(note)
                    try tx.put(Plain(id: note.id, date: note.date, title: note.title, body: note.body))
                }
            }
            plain.close()
            let store = try Store(path: dir + "/s", entities: [Note.self], options: StoreOptions(durability: .none))
            defer { store.close() }
            #expect(try store.verify().isEmpty)
            for search in Self.searches {
                let want = Self.expected(notes, search, byDate: true, titleOnly: false)
                let (range, filter) = search.query(on: Note.byText.definition)
                #expect(try store.read { try $0.objects(in: Query<Note>(index: Note.byText.name, range: range, filter: filter)).map(\.id) } == want,
                        "\(search)")
            }
        }
    }

    @Test func badTextIndexesAndWordTestsAreRefused() throws {
        struct Unique: Entity {
            var id: UInt64
            var title: String
            static let entityName = "Note"
            static let indexes: [IndexDefinition] = [{
                var definition = IndexDefinition.text("words", fields: ["title"], order: [])
                definition.unique = true
                return definition
            }()]
        }
        struct Misplaced: Entity {
            var id: UInt64
            var title: String
            static let entityName = "Note"
            static let indexes = [IndexDefinition("byWord", ["title", .ascending(IndexDefinition.wordComponent)])]
        }
        struct Numbers: Entity {
            var id: UInt64
            var count: Int64
            static let entityName = "Note"
        }
        try withTemporaryDirectory { dir in
            for (type, reason) in [(Unique.self as any Entity.Type, "cannot be unique"), (Misplaced.self, "#word")] {
                #expect {
                    _ = try Store(path: dir + "/\(reason.count)", entities: [type], options: StoreOptions(durability: .none))
                } throws: { error in
                    guard case let FeedstoreError.invalidIndexDefinition(_, _, message) = error else { return false }
                    return message.contains(reason)
                }
            }
            let store = try Store(path: dir + "/n", entities: [Numbers.self], options: StoreOptions(durability: .none))
            defer { store.close() }
            try store.write { tx in try tx.put(Numbers(id: 1, count: 3)) }
            #expect {
                try store.read { try $0.count(Query<Numbers>(index: "id", filter: .field("count").hasWord("3"))) }
            } throws: { error in
                guard case let FeedstoreError.invalidFilter(_, reason) = error else { return false }
                return reason.contains("has the word \"3\"") && reason.contains("count")
            }
        }
    }

    @Test func wordTestsReadAndWriteTheirJSONForm() throws {
        let conditions: [IndexCondition] = [
            .words(fields: ["title", "body"], WordTest(.equals, "report")),
            .field("title").hasWord(startingWith: "rep"),
            .and([.field("title").hasWord("a"), .not(.field("body").hasWord(startingWith: "b"))]),
        ]
        for condition in conditions {
            #expect(try IndexCondition(jsonText: condition.jsonText) == condition, "\(condition.jsonText)")
        }
        #expect(try IndexCondition(jsonText: #"{"fields": ["title"], "wordPrefix": "re"}"#) == .field("title").hasWord(startingWith: "re"))
        for bad in [#"{"fields": [], "word": "x"}"#, #"{"field": "title", "word": 3}"#, #"{"word": "x"}"#,
                    #"{"field": "title", "word": "x", "wordPrefix": "y"}"#, #"{"field": "title", "word": "x", "caseInsensitive": true}"#] {
            #expect(throws: IndexCondition.SyntaxError.self, "\(bad)") { try IndexCondition(jsonText: bad) }
        }
    }
}
