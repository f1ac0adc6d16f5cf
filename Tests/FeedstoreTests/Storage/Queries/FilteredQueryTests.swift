@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Queries filtered by a condition chosen at run time: counts, positions, rows at positions and
/// windows agree with the range read whole and filtered by the condition on each record's fields
/// by name (``IndexCondition/holds(_:)``, apart from the stored-bytes filter the reads use), in
/// both directions, before and after the transaction has counted the query.
@Suite(.blocking) struct FilteredQueryTests {
    /// A random condition on `Item`'s fields, of every test the language has, nested.
    static func condition(_ values: inout RandomValues, depth: Int = 0) -> IndexCondition {
        let comparisons: [IndexCondition.Comparison] = [.equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual]
        let leaf = Int.random(in: 0..<(depth < 2 ? 9 : 6), using: &values.rng)
        let comparison = comparisons.randomElement(using: &values.rng)!
        switch leaf {
        case 0: return .compare(field: "group", comparison, Bool.random(using: &values.rng) ? .null : .int(Int64.random(in: 0...4, using: &values.rng)))
        case 1: return .compare(field: "score", comparison, .double(values.double()))
        case 2: return .compare(field: "name", comparison, .string(values.string()))
        case 3: return .compare(field: "flag", comparison, .bool(Bool.random(using: &values.rng)))
        case 4:
            let matches: [TextTest.Match] = [.equals, .contains, .hasPrefix, .hasSuffix]
            let text = ["a", "é", "E", "e\u{301}", "A\u{30A}", "å", "", "b", "ab", "ﬁ", "FI", "😀"].randomElement(using: &values.rng)!
            return .text(field: "name", TextTest(matches.randomElement(using: &values.rng)!, text,
                                                  caseInsensitive: Bool.random(using: &values.rng),
                                                  diacriticInsensitive: Bool.random(using: &values.rng)))
        case 5:
            return Bool.random(using: &values.rng)
                ? .oneOf(field: "group", (0..<Int.random(in: 0...3, using: &values.rng)).map { _ in .int(Int64.random(in: 0...4, using: &values.rng)) })
                : .isNull(field: Bool.random(using: &values.rng) ? "group" : "tag")
        case 6: return .and((0..<Int.random(in: 1...3, using: &values.rng)).map { _ in condition(&values, depth: depth + 1) })
        case 7: return .or((0..<Int.random(in: 1...3, using: &values.rng)).map { _ in condition(&values, depth: depth + 1) })
        default: return .not(condition(&values, depth: depth + 1))
        }
    }

    static func item(_ id: Int64, _ values: inout RandomValues) -> Item {
        Item(id: id, group: Int.random(in: 0..<5, using: &values.rng) == 0 ? nil : Int64.random(in: 0...4, using: &values.rng),
             score: values.double(), name: values.string() + " \(id)", flag: Bool.random(using: &values.rng),
             tag: Bool.random(using: &values.rng) ? nil : UUID())
    }

    @Test(arguments: testSeeds(TestSize.choose(quick: 3, long: 12)))
    func filteredReadsAgreeWithTheRangeFilteredRecordByRecord(seed: UInt64) throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Item.self], options: StoreOptions(durability: .none))
            defer { store.close() }
            var values = RandomValues(seed: seed)
            try store.write { tx in for id in 1...300 { try tx.put(Self.item(Int64(id), &values)) } }
            let ranges: [(index: String, range: IndexRange)] = [("byGroupScore", .all), ("byGroupScore", .prefix(.int(2))),
                                                                 ("flagged", .all), ("byName", .all), ("id", .all)]
            for round in 0..<40 {
                let condition = Self.condition(&values)
                let (index, range) = ranges[round % ranges.count]
                for reverse in [false, true] {
                    let context = "seed \(seed) round \(round) \(index) reverse \(reverse): \(condition)"
                    let query = Query(Item.self, index: index, range: range, reverse: reverse, filter: condition)
                    let expected = try store.read { tx throws in
                        try tx.entries(entity: "Item", index: index, range: range, reverse: reverse)
                            .filter { entry in condition.holds { FieldPath($0).value(in: entry.record) } }
                            .map { entry -> Int64 in
                                guard case let .int(id) = entry.id else { return -1 }
                                return id
                            }
                    }
                    let offset = Int.random(in: 0...max(0, expected.count), using: &values.rng), limit = Int.random(in: 0...20, using: &values.rng)
                    let window = Array(expected.dropFirst(offset).prefix(limit))
                    try store.read { tx throws in
                        // A window first: this transaction has not counted the query, so the walk tests records as it goes.
                        #expect(try tx.objects(in: query, offset: offset, limit: limit).map(\.id) == window, "\(context): window before counting")
                        #expect(try tx.count(query) == expected.count, "\(context): count")
                        #expect(try tx.objects(in: query).map(\.id) == expected, "\(context): rows")
                        #expect(try tx.objects(in: query, offset: offset, limit: limit).map(\.id) == window, "\(context): window")
                        for _ in 0..<5 {
                            let position = Int.random(in: -1...expected.count, using: &values.rng)
                            let want = expected.indices.contains(position) ? expected[position] : nil
                            #expect(try tx.object(at: position, in: query)?.id == want, "\(context): object(at: \(position))")
                            let id = Int64.random(in: 1...310, using: &values.rng)
                            #expect(try tx.position(of: id, in: query) == expected.firstIndex(of: id), "\(context): position(of: \(id))")
                        }
                    }
                    // The same by name, without the type.
                    let named = try store.read { tx throws in
                        try tx.entries(entity: "Item", index: index, range: range, reverse: reverse, offset: offset, limit: limit, filter: condition)
                    }
                    #expect(named.map(\.id) == window.map { FieldValue.int($0) }, "\(context): entries by name")
                }
            }
        }
    }

    /// Each field kind compared with a constant of each kind: a constant that converts to the
    /// field's kind without loss compares as that kind; any other is refused, naming the field
    /// and both kinds, rather than matching nothing.
    @Test func everyKindPairOfAComparisonConvertsOrIsRefused() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [EveryKeyKind.self])
            defer { store.close() }
            try store.write { tx in
                try tx.put(EveryKeyKind(id: 1, b: true, i: 5, u: 5, d: 5, t: Date(timeIntervalSince1970: 5), s: "5", y: Data([5]),
                                        g: ComponentKindTests.uuid))
                try tx.put(EveryKeyKind(id: 2, b: false, i: 6, u: 6, d: 6.5, t: Date(timeIntervalSince1970: 6), s: "6", y: Data([6]), g: UUID()))
            }
            for (kind, field, _) in ComponentKindTests.fields {
                for (valueKind, _, value) in ComponentKindTests.fields {
                    let query = Query(EveryKeyKind.self, index: "id", filter: .field(field) == value)
                    let converts = kind == valueKind || ComponentKindTests.converting.contains([kind, valueKind])
                    if converts {
                        // Record 1 holds the value 5 in every field (or the uuid, the string "5", the bytes [5]).
                        #expect(try store.read { try $0.objects(in: query).map(\.id) } == [1], "\(field) == \(value)")
                        // Record 2 differs in every field.
                        #expect(try store.read { try $0.count(Query(EveryKeyKind.self, index: "id", filter: .field(field) != value)) } == 1,
                                "\(field) != \(value)")
                    } else {
                        #expect {
                            try store.read { try $0.count(query) }
                        } throws: { error in
                            guard case let FeedstoreError.invalidFilter(entity, reason) = error else { return false }
                            return entity == "EveryKeyKind" && reason.contains("field \(field)") && reason.contains(value.kindName)
                        }
                    }
                }
            }
        }
    }

    /// What each text test does with case, diacritics, canonical equivalence and character
    /// boundaries, written out here apart from the library's folding.
    @Test(arguments: [
        ("report for Q3", TextTest.contains("REPORT", caseInsensitive: true), true),
        ("report for Q3", TextTest.contains("REPORT"), false),
        ("Straße", TextTest.equals("STRASSE", caseInsensitive: true), true),
        ("Straße", TextTest.equals("strasse"), false),
        ("café", TextTest.contains("cafe\u{301}"), true), // the same text in two forms
        ("cafe\u{301}", TextTest.hasSuffix("é"), true),
        ("café", TextTest.contains("cafe"), false), // é is one character, not e
        ("café", TextTest.hasPrefix("cafe", diacriticInsensitive: true), true),
        ("Ångström", TextTest.contains("angstrom", caseInsensitive: true, diacriticInsensitive: true), true),
        ("Ångström", TextTest.contains("angstrom", caseInsensitive: true), false),
        ("ﬁle", TextTest.hasPrefix("FI", caseInsensitive: true), true),
        ("e\u{301}", TextTest.contains("e"), false),
        ("e\u{301}", TextTest.contains("e", diacriticInsensitive: true), true),
        ("a\r\nb", TextTest.contains("\r"), false), // CR LF is one character
        ("ΣΑΣ", TextTest.equals("σασ", caseInsensitive: true), true),
        ("anything", TextTest.contains(""), true),
        ("", TextTest.hasPrefix("a"), false),
        ("😀 party", TextTest.hasPrefix("😀"), true),
    ])
    func textTestsFoldCaseAndDiacriticsAndKeepCharacters(value: String, test: TextTest, expected: Bool) {
        #expect(test.holds(for: .string(value)) == expected, "\(value) \(test.description)")
        // The stored-bytes path (as reads test records) agrees.
        var bytes = Array(value.utf8)
        #expect(bytes.withUnsafeMutableBytes { TextMatcher(test).matches(utf8: UnsafeRawBufferPointer($0)) } == expected)
        #expect(!test.holds(for: .int(1)), "a value that is not text passes no text test")
    }

    @Test func badFiltersAreRefusedNamingTheProblem() throws {
        try withTemporaryDirectory { dir in
            let store = try populatedDemoStore(at: dir + "/s", seed: 3, messages: 50, contacts: 5)
            defer { store.close() }
            let folder = Query(Message.byFolderDate, prefix: 1)
            #expect {
                try store.read { try $0.count(folder.filter(.field("subject").contains("x"))) }
            } throws: { error in
                guard case let FeedstoreError.unknownField(entity, field, usedBy, fields) = error else { return false }
                return entity == "Message" && field == "subject" && usedBy == "the filter" && fields.contains("title")
            }
            #expect {
                try store.read { try $0.count(folder.filter(.field("folder").contains("1"))) }
            } throws: { error in
                guard case let FeedstoreError.invalidFilter(_, reason) = error else { return false }
                return reason.contains("folder is stored as int") && reason.contains("contains")
            }
            #expect {
                try store.read { try $0.objects(in: folder.filter(.field("date") > "yesterday")) }
            } throws: { error in
                guard case let FeedstoreError.invalidFilter(_, reason) = error else { return false }
                return reason.contains("field date") && reason.contains("ISO 8601")
            }
            // A watcher reports it with its first batch.
            let watcher = store.watch(folder.filter(.field("nope") == 1))
            #expect(throws: FeedstoreError.self) { try watcher.poll() }
        }
    }

    @Test func typedFiltersNameFieldsByKeyPath() throws {
        try withTemporaryDirectory { dir in
            let store = try populatedDemoStore(at: dir + "/s", seed: 5, messages: 400, contacts: 10)
            defer { store.close() }
            let query = Query(Message.byFolderDate, prefix: 2).filter(.contains(\.title, "RE", caseInsensitive: true) && \.isRead == false)
            #expect(query.filter == (.field("title").contains("RE", caseInsensitive: true) && .field("isRead") == false))
            let got = try store.read { try $0.objects(in: query) }
            let all = try store.read { try $0.objects(in: Query(Message.byFolderDate, prefix: 2)) }
            let want = all.filter { $0.title.lowercased().contains("re") && !$0.isRead }
            #expect(got.map(\.id) == want.map(\.id))
            #expect(!want.isEmpty)
            let contacts = Query(Message.byFolderDate).filter(.isIn(\.contactId, [1, 2]))
            #expect(try store.read { try $0.objects(in: contacts) }.allSatisfy { [1, 2].contains($0.contactId) })
        }
    }

    /// A filter that is the index's own condition leaves nothing to test: the query reads the
    /// index as it is, with its counts, and needs no pass over the range.
    @Test func aFilterThatIsThePartialIndexsConditionUsesTheIndex() throws {
        try withTemporaryDirectory { dir in
            let store = try populatedDemoStore(at: dir + "/s", seed: 6, messages: 200, contacts: 10)
            defer { store.close() }
            try store.read { tx throws in
                let unread = try tx.resolve(entity: "Message", index: "unreadByDate", range: .all, filter: .field("isRead") == false)
                #expect(unread.order == nil)
                let narrowed = try tx.resolve(entity: "Message", index: "unreadByDate", range: .all,
                                              filter: .field("isRead") == false && .field("folder") == 1)
                #expect(narrowed.filter?.condition == .compare(field: "folder", .equal, .int(1)))
                #expect(unread.count == (try tx.count(Query(Message.unreadByDate))))
            }
        }
    }
}
