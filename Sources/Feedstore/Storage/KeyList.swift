import Foundation

/// Many byte keys in one buffer (no allocation per key), sortable in memcmp order: what
/// ``Store/verify(progress:)`` collects for every record of an entity, so that checking ten
/// million records costs a few hundred megabytes, not gigabytes.
struct KeyList {
    private var bytes: [UInt8] = []
    /// Where each key starts in `bytes`; the key ends where the next starts.
    private var starts: [Int] = []
    /// The keys' order once sorted (positions into `starts`).
    private var order: [Int32] = []

    var count: Int { starts.count }

    mutating func append(_ key: [UInt8]) {
        starts.append(bytes.count)
        bytes.append(contentsOf: key)
    }

    private func range(_ i: Int) -> Range<Int> { starts[i]..<(i + 1 < starts.count ? starts[i + 1] : bytes.count) }

    /// Sorts the keys in memcmp order.
    mutating func sort() {
        var sorted = (0..<Int32(count)).map { $0 }
        let starts = self.starts
        bytes.withUnsafeBytes { raw in
            func key(_ i: Int32) -> UnsafeRawBufferPointer {
                let i = Int(i)
                return UnsafeRawBufferPointer(rebasing: raw[starts[i]..<(i + 1 < starts.count ? starts[i + 1] : raw.count)])
            }
            sorted.sort { key($0).compare(with: key($1)) < 0 }
        }
        order = sorted
    }

    /// The `i`th key in sorted order (after ``sort()``).
    func sorted(_ i: Int) -> ArraySlice<UInt8> { bytes[range(Int(order[i]))] }
}
