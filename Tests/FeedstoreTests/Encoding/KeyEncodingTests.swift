@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

@Suite(.blocking) struct KeyEncodingTests {
    /// memcmp order of encoded keys equals the order of their values, for random tuples with
    /// random directions per component (the same directions on both sides, as in one index).
    @Test(arguments: testSeeds(4))
    func encodedOrderMatchesValueOrder(seed: UInt64) throws {
        var random = RandomValues(seed: seed)
        for _ in 0..<4_000 {
            let width = Int.random(in: 1...3, using: &random.rng)
            let descending = (0..<width).map { _ in Bool.random(using: &random.rng) }
            let a = (0..<width).map { _ in random.scalar() }
            // Mostly the same kind per component, often equal prefixes, to test payload order.
            var b = a.map { Bool.random(using: &random.rng) ? $0 : random.scalar(sameKindAs: $0) }
            if Int.random(in: 0..<5, using: &random.rng) == 0 { b[width - 1] = random.scalar() }
            let ea = try KeyEncoding.encode(a, descending: descending)
            let eb = try KeyEncoding.encode(b, descending: descending)
            let expected = zip(zip(a, b), descending).lazy.map { pair, desc in
                FieldValue.compare(pair.0, pair.1) * (desc ? -1 : 1)
            }.first { $0 != 0 } ?? 0
            let actual = ea == eb ? 0 : (ea.lexicographicallyPrecedes(eb) ? -1 : 1)
            #expect(actual == expected, "seed \(seed): \(a) vs \(b) descending \(descending)")
            // Round trip: values and directions come back.
            let decoded = try KeyDecoder.decode(ea)
            #expect(decoded.map(\.value) == a && decoded.map(\.descending) == descending, "seed \(seed): \(a)")
        }
    }

    /// The memcmp comparison every key comparison goes through orders byte arrays exactly as
    /// `lexicographicallyPrecedes` does, shared prefixes and empty arrays included.
    @Test(arguments: testSeeds(2))
    func bytewiseComparisonMatchesLexicographicOrder(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<20_000 {
            // Lengths past 8 and 16 bytes cover the word-at-a-time comparison and its byte tail.
            func byte() -> UInt8 { [0, 1, 2, 0x7F, 0x80, 0xFF].randomElement(using: &rng)! }
            let a = (0..<Int.random(in: 0...(Bool.random(using: &rng) ? 6 : 40), using: &rng)).map { _ in byte() }
            var b = Array(a.prefix(Int.random(in: 0...a.count, using: &rng)))
            b += (0..<Int.random(in: 0...3, using: &rng)).map { _ in byte() }
            let expected = a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
            #expect(a.withUnsafeBytes { $0.compare(with: b) } == expected, "seed \(seed): \(a) vs \(b)")
            #expect(a.sortsBefore(b) == (expected < 0), "seed \(seed): \(a) vs \(b)")
            let dropped = Int.random(in: 0...a.count, using: &rng)
            let rest = Array(a.dropFirst(dropped))
            let expectedRest = rest == b ? 0 : (rest.lexicographicallyPrecedes(b) ? -1 : 1)
            #expect(a.withUnsafeBytes { $0.compare(dropping: dropped, with: b) } == expectedRest, "seed \(seed): \(a) vs \(b)")
        }
    }

    /// The value order itself agrees with Swift's own `<` for every kind Swift orders.
    @Test(arguments: testSeeds(2))
    func valueOrderMatchesSwiftOrder(seed: UInt64) {
        var random = RandomValues(seed: seed)
        for _ in 0..<4_000 {
            let (x, y) = (random.string(), random.string())
            // Compare with Swift only where Swift's answer is consistent (exactly one relation).
            let swiftRelations = [x < y, y < x, x == y].filter { $0 }.count
            if swiftRelations == 1 {
                #expect((FieldValue.string(x) < .string(y)) == (x < y), "\(x.unicodeScalars.map(\.value)) vs \(y.unicodeScalars.map(\.value))")
            }
            #expect((FieldValue.string(x) == .string(y)) == (x == y))
            let (i, j) = (random.int(), random.int())
            #expect((FieldValue.int(i) < .int(j)) == (i < j))
            let (d, e) = (random.double(), random.double())
            if !d.isNaN && !e.isNaN { #expect((FieldValue.double(d) < .double(e)) == (d < e)) }
        }
    }

    /// Swift's own `<` is not total for these; ours is, and agrees with Swift's `==`.
    @Test func stringOrderIsTotalWhereSwiftsIsNot() {
        let a = "e\u{301}", b = "\u{E9}\u{0}"
        #expect(FieldValue.string(a) < .string(b))
        #expect(!(FieldValue.string(b) < .string(a)) && FieldValue.string(a) != .string(b))
    }

    @Test func edgeCases() throws {
        func key(_ v: FieldValue, _ desc: Bool = false) throws -> [UInt8] { try KeyEncoding.encode([v], descending: [desc]) }
        // -0.0 and 0.0 are one key; every NaN is one key, above +infinity.
        #expect(try key(.double(-0.0)) == key(.double(0.0)))
        #expect(try key(.double(.nan)) == key(.double(-.nan)))
        #expect(try key(.double(.infinity)).lexicographicallyPrecedes(key(.double(.nan))))
        // Canonically equivalent strings are one key.
        #expect(try key(.string("é")) == key(.string("e\u{301}")))
        // Prefixes and embedded zeros, ascending and descending.
        #expect(try key(.string("a")).lexicographicallyPrecedes(key(.string("a\0"))))
        #expect(try key(.string("a\0")).lexicographicallyPrecedes(key(.string("a\u{1}"))))
        #expect(try key(.string("ab", ), true).lexicographicallyPrecedes(key(.string("a"), true)))
        // nil sorts first ascending, last descending.
        #expect(try key(.null).lexicographicallyPrecedes(key(.int(.min))))
        #expect(try key(.int(.min), true).lexicographicallyPrecedes(key(.null, true)))
        // Arrays and objects are not key components.
        #expect(throws: KeyEncodingError.self) { try KeyEncoding.encode([.array([])]) }
    }

    @Test func malformedKeysAreErrorsNotCrashes() throws {
        var random = RandomValues(seed: 99)
        for _ in 0..<3_000 {
            var bytes = try KeyEncoding.encode((0..<Int.random(in: 1...3, using: &random.rng)).map { _ in random.scalar() })
            switch Int.random(in: 0..<3, using: &random.rng) {
            case 0: bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random.rng)))
            case 1: bytes[Int.random(in: 0..<bytes.count, using: &random.rng)] = UInt8.random(in: 0...255, using: &random.rng)
            default: bytes = (0..<Int.random(in: 0...12, using: &random.rng)).map { _ in UInt8.random(in: 0...255, using: &random.rng) }
            }
            do { _ = try KeyDecoder.decode(bytes) } catch let error as FeedstoreError {
                guard case .corruptData = error else { Issue.record("unexpected \(error)"); continue }
            }
        }
    }
}
