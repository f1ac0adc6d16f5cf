@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

@Suite(.blocking) struct RecordCodecTests {
    /// The stored bytes of `fields` (ascending numbers, gaps allowed), made by the encoder the
    /// write path uses: values by field number.
    static func encoded(_ fields: [RecordField]) -> [UInt8] {
        var slots = [FieldValue](repeating: .null, count: Int(fields.map(\.id).max() ?? 0) + 1)
        for field in fields { slots[Int(field.id)] = field.value }
        var out: [UInt8] = []
        RecordCodec.encode(byFieldID: slots, into: &out)
        return out
    }

    @Test(arguments: testSeeds(3))
    func randomRecordsRoundTripBitForBit(seed: UInt64) throws {
        var random = RandomValues(seed: seed)
        for _ in 0..<2_000 {
            let fields = (0..<UInt32.random(in: 0...6, using: &random.rng)).map { RecordField(id: $0 * 3 + 1, value: random.value()) }
            let decoded = try RecordCodec.decode(Self.encoded(fields))
            let expected = fields.filter { if case .null = $0.value { false } else { true } }
            #expect(decoded.count == expected.count)
            for (d, e) in zip(decoded, expected) {
                #expect(d.id == e.id && d.value.isIdentical(to: e.value), "seed \(seed): \(e.value)")
            }
        }
    }

    /// Truncated, flipped and random bytes give a typed error (or, rarely, another valid
    /// record), never a crash or a huge allocation.
    @Test(arguments: testSeeds(2, base: 7))
    func malformedRecordsAreErrorsNotCrashes(seed: UInt64) {
        var random = RandomValues(seed: seed)
        var errors = 0
        for _ in 0..<5_000 {
            var bytes = Self.encoded((0..<UInt32.random(in: 1...4, using: &random.rng)).map { RecordField(id: $0, value: random.value()) })
            switch Int.random(in: 0..<4, using: &random.rng) {
            case 0: bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &random.rng)))
            case 1: bytes[Int.random(in: 0..<bytes.count, using: &random.rng)] ^= UInt8(1 << Int.random(in: 0..<8, using: &random.rng))
            case 2: bytes.insert(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], at: Int.random(in: 1..<bytes.count, using: &random.rng))
            default: bytes = [RecordCodec.formatByte] + (0..<Int.random(in: 0...16, using: &random.rng)).map { _ in UInt8.random(in: 0...255, using: &random.rng) }
            }
            do {
                _ = try RecordCodec.decode(bytes)
            } catch let error as FeedstoreError {
                if case .corruptData = error { errors += 1 } else { Issue.record("unexpected \(error)") }
            } catch {
                Issue.record("untyped error \(error)")
            }
        }
        #expect(errors > 2_500)
    }

    /// An object encoded member by member as given: keys in any order, repeated or canonically
    /// equivalent ("é" and "e\u{301}"), which the encoder never writes but damaged bytes can hold.
    static func rawObject(_ members: [(String, FieldValue)]) -> [UInt8] {
        var out: [UInt8] = [RecordCodec.Tag.object.rawValue]
        RecordCodec.appendVarint(UInt64(members.count), to: &out)
        for (key, value) in members {
            RecordCodec.appendVarint(UInt64(key.utf8.count), to: &out)
            out += key.utf8
            RecordCodec.appendValue(value, to: &out)
        }
        return out
    }

    /// The decoder (validation, then reads of the checked bytes) agrees with a second reader of
    /// the format on valid, mutated and random records, and on objects with keys out of order,
    /// repeated or canonically equivalent: the same fields or the same error.
    @Test(arguments: testSeeds(3, base: 11))
    func decodingAgreesWithTheReferenceReader(seed: UInt64) {
        var random = RandomValues(seed: seed)
        let keys = ["a", "b", "é", "e\u{301}", "\u{30A}", "Z"] + (0..<20).map { "k\($0)" }
        var outcomes = [0, 0]
        for _ in 0..<3_000 {
            var valid: [UInt8]
            if Bool.random(using: &random.rng) {
                valid = Self.encoded((0..<UInt32.random(in: 0...5, using: &random.rng)).map { RecordField(id: $0 * 2 + 1, value: random.value()) })
            } else {
                let members = (0..<Int.random(in: 0...24, using: &random.rng)).map { _ in (keys.randomElement(using: &random.rng)!, random.scalar()) }
                valid = [RecordCodec.formatByte, 1, 1] + Self.rawObject(members)
            }
            let bytes = Int.random(in: 0..<3, using: &random.rng) == 0 ? valid : DecoderFuzzTests.input(from: valid, &random)
            switch (Result { try RecordCodec.decode(bytes) }, Result { try ReferenceRecordDecoder.decode(bytes) }) {
            case let (.success(a), .success(b)):
                #expect(a.count == b.count && zip(a, b).allSatisfy { $0.id == $1.id && $0.value.isIdentical(to: $1.value) }, "seed \(seed): \(bytes)")
                outcomes[0] += 1
            case let (.failure(a), .failure(b)):
                #expect("\(a)" == "\(b)", "seed \(seed): \(bytes)\nlibrary:   \(a)\nreference: \(b)")
                outcomes[1] += 1
            case let (a, b):
                Issue.record("seed \(seed): library \(a), reference \(b) for \(bytes)")
            }
        }
        #expect(outcomes[0] > 300 && outcomes[1] > 300, "seed \(seed): \(outcomes)")
    }

    /// `value` with every date moved into the years the date formatter prints.
    static func printableDates(_ value: FieldValue) -> FieldValue {
        switch value {
        case let .date(d):
            let t = d.timeIntervalSinceReferenceDate
            return .date(Date(timeIntervalSinceReferenceDate: t.isFinite ? t.truncatingRemainder(dividingBy: 3e9) : 0))
        case let .array(items): return .array(items.map(printableDates))
        case let .object(members): return .object(members.mapValues(printableDates))
        default: return value
        }
    }

    /// JSON written straight from stored bytes is the JSON of the value as a tree, byte for byte.
    @Test(arguments: testSeeds(2, base: 21))
    func jsonFromStoredBytesMatchesTheTree(seed: UInt64) throws {
        var random = RandomValues(seed: seed)
        for _ in 0..<2_000 {
            let value = Self.printableDates(random.value(depth: 4))
            var bytes: [UInt8] = []
            RecordCodec.appendValue(value, to: &bytes)
            var out: [UInt8] = []
            try bytes.withUnsafeBytes { try StoredValue($0).appendJSON(to: &out) }
            #expect(out == value.jsonBytes, "seed \(seed): \(value.jsonText)")
        }
    }

    @Test func recordJSONIsTheJSONOfTheRecordsFields() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Note.self])
            try store.write { tx in
                try tx.put(Note(id: "n\"1", body: "tab\there é", priority: -3, when: Date(timeIntervalSinceReferenceDate: 1.5), labels: ["a", "b"]))
            }
            try store.read { tx in
                let fields = try #require(try tx.record(entity: "Note", id: .string("n\"1")))
                #expect(try tx.recordJSON(entity: "Note", id: .string("n\"1")) == FieldValue.object(fields).jsonText)
                #expect(try tx.recordJSON(entity: "Note", id: .string("missing")) == nil)
            }
        }
    }

    @Test func deeplyNestedBytesAreRefused() {
        // 10,000 nested one-element arrays: must be refused, not overflow the stack.
        var bytes: [UInt8] = [RecordCodec.formatByte, 1, 1]
        for _ in 0..<10_000 { bytes += [RecordCodec.Tag.array.rawValue, 1] }
        bytes.append(RecordCodec.Tag.null.rawValue)
        #expect(throws: FeedstoreError.self) { try RecordCodec.decode(bytes) }
    }

    struct Everything: Codable, Equatable {
        enum Mood: String, Codable { case calm, loud }
        struct Inner: Codable, Equatable { var x: Int8; var y: [UInt16] }
        var int: Int, int64: Int64, uint8: UInt8, uint64: UInt64, double: Double, float: Float, bool: Bool
        var string: String, date: Date, uuid: UUID, data: Data, url: URL
        var optional: Int?, none: String?, mood: Mood, inner: Inner, list: [Inner], map: [String: Double]
    }

    @Test func codableValuesRoundTripThroughFieldValues() throws {
        let value = Everything(int: -5, int64: .min, uint8: 255, uint64: .max, double: -0.0, float: 1.5, bool: true,
                               string: "a\0é", date: Date(timeIntervalSinceReferenceDate: 12.25), uuid: UUID(), data: Data([0, 1, 255]),
                               url: URL(string: "https://example.com/a?b")!, optional: 3, none: nil, mood: .loud,
                               inner: Everything.Inner(x: -1, y: [1, 2]), list: [Everything.Inner(x: 2, y: [])], map: ["k": 2.5])
        let encoded = try FieldValueEncoder.encode(value)
        guard case let .object(fields) = encoded else { Issue.record("not an object"); return }
        #expect(fields["date"] == .date(value.date) && fields["uuid"] == .uuid(value.uuid) && fields["data"] == .bytes([0, 1, 255]))
        #expect(fields["none"] == nil && fields["uint64"] == .uint(.max) && fields["url"] == .string("https://example.com/a?b"))
        // The same types keep their kinds at the top level too.
        #expect(try FieldValueEncoder.encode(value.date) == .date(value.date))
        #expect(try FieldValueEncoder.encode(value.data) == .bytes([0, 1, 255]))
        let stored = fields.enumerated().map { RecordField(id: UInt32($0.offset), value: $0.element.value) }.sorted { $0.id < $1.id }
        let back = try RecordCodec.decode(Self.encoded(stored))
        var named: [String: FieldValue] = [:]
        for (i, key) in fields.keys.enumerated() { named[key] = back.first { $0.id == UInt32(i) }?.value }
        #expect(try FieldValueDecoder.decode(Everything.self, from: .object(named)) == value)
    }
}
