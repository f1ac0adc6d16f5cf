@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// JSON text as tools write and read it: dates as the ISO 8601 formatter writes them, and
/// ``FieldValue/jsonText`` reading back as the same kinds.
@Suite(.blocking) struct JSONTextTests {
    @Test(arguments: testSeeds(2, base: 31)) func datesPrintAsTheISOFormatterPrintsThem(seed: UInt64) {
        var values = RandomValues(seed: seed)
        let formatter = FieldValue.isoFormatter
        var dates: [Date] = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: -0.0005), Date(timeIntervalSince1970: 0.9995),
                             Date(timeIntervalSince1970: -62_135_596_800), Date(timeIntervalSince1970: 253_402_300_799.999),
                             Date(timeIntervalSince1970: 951_782_400), Date(timeIntervalSince1970: -2_203_891_200),
                             Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSince1970: 1e13), Date(timeIntervalSince1970: -1e12)]
        for _ in 0..<20_000 {
            let seconds = Bool.random(using: &values.rng) ? Double(Int64.random(in: -70_000_000_000...260_000_000_000, using: &values.rng))
                : Double.random(in: -3e10...3e10, using: &values.rng)
            dates.append(Date(timeIntervalSince1970: seconds + Double(Int.random(in: 0..<1000, using: &values.rng)) / 1000))
        }
        for date in dates {
            let text = formatter.string(from: date)
            #expect(FieldValue.date(date).jsonText == "\"" + text + "\"", "seed \(seed): \(date.timeIntervalSince1970)")
            // Read back directly, the same date the formatter reads (nil outside the years 1583 to 9999).
            let parsed = FieldValue.parseJSONDate(text)
            #expect(parsed == nil || parsed == formatter.date(from: text), "seed \(seed): \(text)")
            let year = Int(text.prefix(4)) ?? 0
            #expect((parsed != nil) == (text.count == 24 && year >= 1583), "seed \(seed): \(text)")
        }
        for text in ["2026-02-29T00:00:00.000Z", "2026-13-01T00:00:00.000Z", "2026-01-01T24:00:00.000Z", "2026-01-01T00:00:00.000+01:00",
                     "2026-01-01 00:00:00.000Z", "１９７０-01-01T00:00:00.000Z"] {
            #expect(FieldValue.parseJSONDate(text) == nil, "\(text)")
        }
        #expect(FieldValue.parseJSONDate("2024-02-29T23:59:59.999Z") == formatter.date(from: "2024-02-29T23:59:59.999Z"))
    }

    @Test(arguments: testSeeds(2, base: 41)) func jsonTextReadsBackAsTheSameValue(seed: UInt64) throws {
        var values = RandomValues(seed: seed)
        func value(depth: Int) -> FieldValue {
            switch Int.random(in: 0..<(depth < 3 ? 9 : 7), using: &values.rng) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &values.rng))
            case 2: return .int(values.int())
            case 3: return .uint(UInt64(Int64.max) + UInt64.random(in: 1...UInt64(Int64.max), using: &values.rng))
            case 4:
                let d = values.double()
                return .double(d.isFinite ? d : 0.25)
            case 5, 6: return .string(values.string())
            case 7: return .array((0..<Int.random(in: 0...3, using: &values.rng)).map { _ in value(depth: depth + 1) })
            default:
                var members: [String: FieldValue] = [:]
                for _ in 0..<Int.random(in: 0...3, using: &values.rng) { members[values.string()] = value(depth: depth + 1) }
                return .object(members)
            }
        }
        for _ in 0..<3_000 {
            let original = value(depth: 0)
            let text = original.jsonText
            let back = try FieldValue(jsonText: text)
            // Compared as text: doubles by their printed digits (and -0.0 keeps its sign).
            #expect(back.jsonText == text, "seed \(seed): \(text)")
            #expect(back.kindName == original.kindName, "seed \(seed): \(text)")
        }
    }

    @Test func numbersKeepTheKindTheirTextSays() throws {
        #expect(try FieldValue(jsonText: "2") == .int(2))
        #expect(try FieldValue(jsonText: "2.0") == .double(2))
        #expect(try FieldValue(jsonText: "-0.0").jsonText == "-0.0")
        #expect(try FieldValue(jsonText: "1e3") == .double(1000))
        #expect(try FieldValue(jsonText: "18446744073709551615") == .uint(.max))
        #expect(try FieldValue(jsonText: "-9223372036854775808") == .int(.min))
        // Written digit by digit: every length of either sign, and the extremes.
        for value in [Int64.min, .min + 1, -10, -9, -1, 0, 1, 9, 10, 99, 100, 1_000_000_007, .max] + (0..<19).map({ Int64(pow(10.0, Double($0))) - 1 }) {
            #expect(FieldValue.int(value).jsonText == String(value))
        }
        let unsignedValues: [UInt64] = [.max, .max - 1, UInt64(Int64.max) + 1, 0]
        for value in unsignedValues { #expect(FieldValue.uint(value).jsonText == String(value)) }
        #expect(try FieldValue(jsonText: " [1, \"a\\u00e9\\ud83d\\ude00\\n\"] ") == .array([.int(1), .string("aé😀\n")]))
    }

    @Test func malformedTextIsATypedError() {
        let bad = ["", "1 2", "[1,]", "{\"a\":1,\"a\":2}", "\"\\x\"", "\"\\ud800\"", "\"a\u{1}\"", "01", "-", "1.", "1e", "tru",
                   "{\"a\" 1}", "[", "\"abc", String(repeating: "[", count: 100) + String(repeating: "]", count: 100),
                   "nan", "{1:2}"]
        for text in bad {
            #expect(throws: FeedstoreError.self, "\(text)") { try FieldValue(jsonText: text) }
        }
    }
}
