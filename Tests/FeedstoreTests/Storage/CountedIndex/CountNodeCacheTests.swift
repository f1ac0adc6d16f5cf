@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Testing

/// The table of count-tree nodes a read transaction keeps, checked on its own: nodes are found by
/// their fence's address and length, through growth and collisions, and fences never kept are
/// not found.
@Suite(.blocking) struct CountNodeCacheTests {
    @Test(arguments: testSeeds(2, base: 31))
    func nodesAreFoundByTheirFencesAlone(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        // Fences inside one buffer, as in a parent node: some empty, at the address where the
        // next one starts.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 40_000, alignment: 1)
        defer { buffer.deallocate() }
        let nodeBytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 5_000, alignment: 1)
        defer { nodeBytes.deallocate() }
        var fences: [UnsafeRawBufferPointer] = []
        var at = 0
        while at < buffer.count - 20 {
            let length = Int.random(in: 0...12, using: &rng)
            fences.append(UnsafeRawBufferPointer(rebasing: buffer[at..<at + length]))
            at += length == 0 ? 0 : length
            if length == 0 { fences.append(UnsafeRawBufferPointer(rebasing: buffer[at..<at + 3])); at += 3 }
        }
        fences.shuffle(using: &rng)
        let kept = fences.count / 2
        let cache = CountNodeCache()
        func node(_ i: Int) -> UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: nodeBytes[i % 4_000..<i % 4_000 + 1 + i % 7]) }
        for i in 0..<kept {
            cache.keep(node(i), for: fences[i])
            // Every kept fence stays found as the table grows.
            if i % 997 == 0 {
                for j in 0...i { #expect(cache.node(for: fences[j]).map { $0.baseAddress == node(j).baseAddress && $0.count == node(j).count } == true) }
            }
        }
        for i in 0..<kept {
            let found = cache.node(for: fences[i])
            #expect(found?.baseAddress == node(i).baseAddress && found?.count == node(i).count, "seed \(seed): fence \(i)")
        }
        for i in kept..<fences.count { #expect(cache.node(for: fences[i]) == nil, "seed \(seed): fence \(i) was never kept") }
        #expect(kept > 2_000)
    }
}
