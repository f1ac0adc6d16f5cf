import Foundation

extension FieldValue {
    /// Bit-for-bit equality (unlike `==`, which treats -0.0 and 0.0 as equal keys): whether
    /// rewriting one with the other changes stored content.
    func isIdentical(to other: FieldValue) -> Bool {
        switch (self, other) {
        case let (.double(a), .double(b)): a.bitPattern == b.bitPattern
        case let (.date(a), .date(b)): a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case let (.string(a), .string(b)): a.utf8.elementsEqual(b.utf8)
        case let (.array(a), .array(b)): a.count == b.count && zip(a, b).allSatisfy { $0.isIdentical(to: $1) }
        case let (.object(a), .object(b)):
            a.count == b.count && a.allSatisfy { key, value in b[key].map { value.isIdentical(to: $0) } ?? false }
        default: self == other
        }
    }
}
