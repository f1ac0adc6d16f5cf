/// The rows a walk makes, gathered into an array at the end. Reads are generic over the
/// application's types and compiled once for all of them, and in such code each append to an
/// `Array` looks up the array's type at run time (a few hundred instructions, per row). Rows
/// collected here cost a move each; the array's type is looked up once.
struct RowCollector<Row>: ~Copyable {
    private var base: UnsafeMutablePointer<Row>
    private var count = 0
    private var capacity: Int

    init(capacity: Int = 16) {
        self.capacity = Swift.max(capacity, 1)
        base = .allocate(capacity: self.capacity)
    }

    /// Inlined into the caller, which has the row's type at hand: called, it would need the
    /// collector's own generic type, looked up at run time on every row.
    @inline(__always)
    mutating func append(_ row: consuming Row) {
        if count == capacity {
            let larger = UnsafeMutablePointer<Row>.allocate(capacity: capacity * 2)
            larger.moveInitialize(from: base, count: count)
            base.deallocate()
            base = larger
            capacity *= 2
        }
        (base + count).initialize(to: row)
        count += 1
    }

    /// The rows, in the order appended.
    consuming func array() -> [Row] {
        let (base, count) = (self.base, self.count)
        discard self
        defer { base.deallocate() }
        return Array(unsafeUninitializedCapacity: count) { buffer, initialized in
            if count > 0 { buffer.baseAddress!.moveInitialize(from: base, count: count) }
            initialized = count
        }
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }
}
