/// The count-tree nodes a read transaction has read, kept for its later reads: its snapshot
/// never changes, and LMDB lends a read transaction's bytes from the map until it ends, so a
/// node read once can be read again from where it lies. Positional reads of one transaction
/// (a list's rows, a screen, a window) then descend the tree without searching LMDB for the root
/// and the nodes above their bucket: each such search starts again from the top of LMDB's own
/// tree, as much work as the rest of the read.
///
/// Nodes are found by their parent's fence for them: a fence's bytes lie in the parent node, at
/// an address that names that child alone for the transaction's life. Roots are found by their
/// counts database. Used on the transaction's thread only, like the transaction.
final class CountNodeCache {
    /// Each tree's height and root node, by counts database.
    @exclusivity(unchecked) private var roots: [(database: LMDBDatabase, height: Int, node: UnsafeRawBufferPointer)] = []
    /// An open-addressing table of nodes by the address and length of their fence in the parent
    /// (the address 0 marks an empty slot); its capacity is a power of two.
    @exclusivity(unchecked) private var fences: [(address: UInt, length: Int)] = []
    @exclusivity(unchecked) private var nodes: [UnsafeRawBufferPointer] = []
    @exclusivity(unchecked) private var count = 0

    func root(of database: LMDBDatabase) -> (height: Int, node: UnsafeRawBufferPointer)? {
        for root in roots where root.database == database { return (root.height, root.node) }
        return nil
    }

    func keepRoot(_ node: UnsafeRawBufferPointer, height: Int, of database: LMDBDatabase) {
        roots.append((database, height, node))
    }

    /// The node that `fence` (bytes inside its parent node) names, if kept.
    func node(for fence: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard !fences.isEmpty else { return nil }
        let address = Self.address(fence)
        var slot = Self.slot(address, fence.count, capacity: fences.count)
        while fences[slot].address != 0 {
            if fences[slot].address == address && fences[slot].length == fence.count { return nodes[slot] }
            slot = (slot + 1) & (fences.count - 1)
        }
        return nil
    }

    func keep(_ node: UnsafeRawBufferPointer, for fence: UnsafeRawBufferPointer) {
        if (count + 1) * 4 > fences.count * 3 { grow() }
        insert(node, address: Self.address(fence), length: fence.count)
    }

    private func insert(_ node: UnsafeRawBufferPointer, address: UInt, length: Int) {
        var slot = Self.slot(address, length, capacity: fences.count)
        while fences[slot].address != 0 {
            if fences[slot].address == address && fences[slot].length == length { return }
            slot = (slot + 1) & (fences.count - 1)
        }
        fences[slot] = (address, length)
        nodes[slot] = node
        count += 1
    }

    private func grow() {
        let old = zip(fences, nodes).filter { $0.0.address != 0 }
        let capacity = max(64, fences.count * 2)
        fences = Array(repeating: (0, 0), count: capacity)
        nodes = Array(repeating: UnsafeRawBufferPointer(start: nil, count: 0), count: capacity)
        count = 0
        for (fence, node) in old { insert(node, address: fence.address, length: fence.length) }
    }

    /// A fence's address; an empty fence (a tree's first) is named by where it would start,
    /// which its length tells apart from the fence starting there.
    private static func address(_ fence: UnsafeRawBufferPointer) -> UInt {
        UInt(bitPattern: fence.baseAddress) | 1 << 63
    }

    private static func slot(_ address: UInt, _ length: Int, capacity: Int) -> Int {
        // Fibonacci hashing of the address (nodes lie bytes apart, so low bits alone collide).
        Int(truncatingIfNeeded: ((address &+ UInt(length)) &* 0x9E37_79B9_7F4A_7C15) >> 40) & (capacity - 1)
    }
}
