import FeedstoreDemo
import Feedstore
import Foundation

/// Random stored values, biased towards the edge cases of the key and record encodings.
public struct RandomValues {
    public var rng: SeededGenerator

    public init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    static let edgeInts: [Int64] = [.min, .min + 1, -256, -1, 0, 1, 255, 256, .max - 1, .max]
    static let edgeDoubles: [Double] = [-.infinity, -.greatestFiniteMagnitude, -1, -.leastNonzeroMagnitude, -0.0, 0.0,
                                        .leastNonzeroMagnitude, .leastNormalMagnitude, 1, 1.5, .greatestFiniteMagnitude,
                                        .infinity, .nan, -.nan, .signalingNaN]
    static let edgeStrings: [String] = ["", "a", "a\0", "a\0b", "\0", "\0\0", "ab", "b", "é", "e\u{301}", "café", "cafe\u{301}",
                                        "Å", "A\u{30A}", "\u{212B}", "z", "😀", "日本", "\u{FFFF}", "ﬁ", "\u{10FFFF}"]

    public mutating func int() -> Int64 {
        Bool.random(using: &rng) ? Self.edgeInts.randomElement(using: &rng)! : Int64.random(in: -1000...1000, using: &rng)
    }

    public mutating func double() -> Double {
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: Self.edgeDoubles.randomElement(using: &rng)!
        case 1: Double(Int.random(in: -20...20, using: &rng)) / 4
        default: Double(bitPattern: rng.next())
        }
    }

    public mutating func string() -> String {
        if Bool.random(using: &rng) { return Self.edgeStrings.randomElement(using: &rng)! }
        let alphabet: [Unicode.Scalar] = ["a", "b", "\0", "é", "e", "\u{301}", "\u{30A}", "A", "😀", "\u{7F}", "\u{80}", "ÿ"]
        var s = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...5, using: &rng) { s.append(alphabet.randomElement(using: &rng)!) }
        return String(s)
    }

    public mutating func bytes() -> [UInt8] {
        let alphabet: [UInt8] = [0, 0, 1, 0x7F, 0x80, 0xFE, 0xFF, 0xFF]
        return (0..<Int.random(in: 0...5, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }
    }

    /// A value that can be a key component.
    public mutating func scalar() -> FieldValue {
        switch Int.random(in: 0..<9, using: &rng) {
        case 0: .null
        case 1: .bool(Bool.random(using: &rng))
        case 2: .int(int())
        case 3: .uint(Bool.random(using: &rng) ? UInt64.random(in: 0...3, using: &rng) : rng.next())
        case 4: .double(double())
        case 5: .date(Date(timeIntervalSinceReferenceDate: double()))
        case 6: .string(string())
        case 7: .bytes(bytes())
        default: .uuid(Bool.random(using: &rng) ? UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, UInt8.random(in: 0...2, using: &rng)))
                                               : UUID(uuid: (UInt8.random(in: 0...255, using: &rng), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)))
        }
    }

    /// A scalar of the same kind as `like`, so comparisons exercise the payload order.
    public mutating func scalar(sameKindAs like: FieldValue) -> FieldValue {
        for _ in 0..<50 {
            let v = scalar()
            if v.kindName == like.kindName { return v }
        }
        return like
    }

    /// Any value, nested up to `depth`.
    public mutating func value(depth: Int = 3) -> FieldValue {
        guard depth > 0, Int.random(in: 0..<4, using: &rng) == 0 else { return scalar() }
        if Bool.random(using: &rng) {
            return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in value(depth: depth - 1) })
        }
        var members: [String: FieldValue] = [:]
        for _ in 0..<Int.random(in: 0...3, using: &rng) { members[string()] = value(depth: depth - 1) }
        return .object(members)
    }
}
