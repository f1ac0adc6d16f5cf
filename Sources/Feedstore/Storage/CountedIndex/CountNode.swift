/// The stored form of one node of a ``CountedIndex``:
/// `n: UInt16 | n × entries: UInt64 | n × fence end: UInt16 | fence bytes`, little-endian.
/// Entry counts sit at fixed offsets, so counting an insertion patches 8 bytes in place.
struct CountNode: Equatable {
    var fences: [[UInt8]]
    var counts: [Int]

    var total: Int { counts.reduce(0, +) }
    var byteCount: Int { 2 + fences.count * 10 + fences.reduce(0) { $0 + $1.count } }

    func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(byteCount)
        out.appendLittleEndian(UInt16(fences.count))
        for c in counts { out.appendLittleEndian(UInt64(c)) }
        var end = 0
        for f in fences {
            end += f.count
            out.appendLittleEndian(UInt16(end))
        }
        for f in fences { out.append(contentsOf: f) }
        return out
    }

    init(fences: [[UInt8]], counts: [Int]) {
        self.fences = fences
        self.counts = counts
    }

    /// Parses a stored node, checking all of it (reads check only what keeps them in bounds).
    init(_ view: CountNodeView) throws {
        try view.validate()
        fences = (0..<view.count).map { Array(view.fenceBytes($0)) }
        counts = (0..<view.count).map { view.entries($0) }
    }

    /// The byte offset of child `i`'s count in the stored form.
    static func countOffset(_ i: Int) -> Int { 2 + 8 * i }
}

/// A read-only view of a stored node, over bytes lent by LMDB. Creating it checks in O(1) that
/// the layout fits the bytes, and every accessor stays in bounds whatever the bytes hold, so a
/// lookup reads only the fences and counts it needs; ``validate()`` checks the whole node.
struct CountNodeView {
    let bytes: UnsafeRawBufferPointer
    let count: Int
    private let fencesStart: Int
    /// Bytes of all fences together.
    private let fencesLength: Int

    init(_ bytes: UnsafeRawBufferPointer) throws {
        func corrupt(_ reason: String) -> FeedstoreError { .corruptData(what: "index counts", reason: reason) }
        guard bytes.count >= 2 else { throw corrupt("node of \(bytes.count) bytes") }
        let n = Int(UInt16(littleEndian: bytes.loadUnaligned(as: UInt16.self)))
        guard n >= 1, bytes.count >= 2 + 10 * n else { throw corrupt("node claims \(n) children in \(bytes.count) bytes") }
        self.bytes = bytes
        self.count = n
        self.fencesStart = 2 + 10 * n
        self.fencesLength = bytes.count - fencesStart
        guard rawFenceEnd(n - 1) == fencesLength else { throw corrupt("node's fences do not end with it") }
    }

    /// Checks what reads only keep in bounds: fences end in ascending order, and counts are
    /// within ``maximumCount``.
    func validate() throws {
        func corrupt(_ reason: String) -> FeedstoreError { .corruptData(what: "index counts", reason: reason) }
        var previous = 0
        for i in 0..<count {
            let end = rawFenceEnd(i)
            guard end >= previous else { throw corrupt("fence \(i) out of bounds") }
            previous = end
            guard rawEntries(i) <= Self.maximumCount else { throw corrupt("child \(i) claims \(rawEntries(i)) entries") }
        }
    }

    /// 2^40 entries under one child: more than an LMDB database can hold. Reads clamp counts to
    /// it, so that sums over a node cannot overflow whatever the bytes say.
    static let maximumCount: UInt64 = 1 << 40

    private func rawFenceEnd(_ i: Int) -> Int {
        Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 2 + 8 * count + 2 * i, as: UInt16.self)))
    }

    private func rawEntries(_ i: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 2 + 8 * i, as: UInt64.self))
    }

    /// Entries below child `i`.
    func entries(_ i: Int) -> Int {
        Int(truncatingIfNeeded: min(rawEntries(i), Self.maximumCount))
    }

    func fenceBytes(_ i: Int) -> UnsafeRawBufferPointer {
        let end = min(rawFenceEnd(i), fencesLength)
        let start = i == 0 ? 0 : min(rawFenceEnd(i - 1), end)
        return UnsafeRawBufferPointer(rebasing: bytes[(fencesStart + start)..<(fencesStart + end)])
    }

    func fence(_ i: Int) -> [UInt8] { Array(fenceBytes(i)) }

    /// The stored form of this node with child `i` replaced by children counting `counts`, the
    /// first keeping child `i`'s fence and the others taking `separators` (one fewer than
    /// `counts`), copying the other children's bytes as they are. The node must be valid.
    func replacingChild(_ i: Int, withCounts counts: [Int], separators: [[UInt8]]) -> [UInt8] {
        let added = separators.count
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 10 * added + separators.reduce(0) { $0 + $1.count })
        out.appendLittleEndian(UInt16(count + added))
        out.append(contentsOf: bytes[2..<(2 + 8 * i)])
        for c in counts { out.appendLittleEndian(UInt64(c)) }
        out.append(contentsOf: bytes[(2 + 8 * (i + 1))..<(2 + 8 * count)])
        func appendEnd(_ end: Int) { out.appendLittleEndian(UInt16(end)) }
        for j in 0...i { appendEnd(rawFenceEnd(j)) }
        var end = rawFenceEnd(i)
        for separator in separators {
            end += separator.count
            appendEnd(end)
        }
        let shift = end - rawFenceEnd(i)
        for j in (i + 1)..<count { appendEnd(rawFenceEnd(j) + shift) }
        out.append(contentsOf: bytes[fencesStart..<(fencesStart + rawFenceEnd(i))])
        for separator in separators { out.append(contentsOf: separator) }
        out.append(contentsOf: bytes[(fencesStart + rawFenceEnd(i))...])
        return out
    }

    func sum(before i: Int) -> Int {
        var s = 0
        for j in 0..<i { s += entries(j) }
        return s
    }

    /// The last child whose fence is <= `key` (child 0 when none is).
    func child(containing key: [UInt8]) -> Int {
        // Child 0 always qualifies; the first of the others whose fence is above the key ends them.
        (1..<Swift.max(1, count)).partitionPoint { fenceBytes($0).compare(with: key) > 0 } - 1
    }
}
