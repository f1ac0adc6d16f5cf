@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Testing

/// The filtered order against a sorted array of the same keys, after every randomized step:
/// appends in order (as a watcher's first pass builds it), then inserts and removals of keys
/// of varied lengths, with its invariant checker run each time.
@Suite struct FilteredOrderTests {
    static func key(_ n: Int) -> [UInt8] {
        // Lengths vary, and some keys are prefixes of others.
        let head: [UInt8] = [UInt8(n / 256 % 256), UInt8(n % 256)]
        return n % 3 == 0 ? head : head + Array(repeating: UInt8(n % 7), count: n % 5 + 1)
    }

    @Test(arguments: testSeeds(TestSize.choose(quick: 3, long: 10)))
    func answersAsASortedArrayDoes(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let order = FilteredOrder()
        var model: [[UInt8]] = []
        // Built in order, as a pass over a range builds it: enough keys for three levels.
        for n in stride(from: 0, to: 30_000, by: 3) {
            let key = Self.key(n)
            if let last = model.last, !last.sortsBefore(key) { continue }
            key.withUnsafeBytes { order.append($0) }
            model.append(key)
        }
        #expect(order.invariantViolations() == [], "seed \(seed) after the build")
        for step in 0..<4_000 {
            let key = Self.key(Int.random(in: 0..<30_000, using: &rng))
            let at = (0..<model.count).partitionPoint { !model[$0].sortsBefore(key) }
            let present = at < model.count && model[at] == key
            if Bool.random(using: &rng) {
                #expect(order.insert(key) == !present, "seed \(seed) step \(step): insert")
                if !present { model.insert(key, at: at) }
            } else {
                #expect(order.remove(key) == present, "seed \(seed) step \(step): remove")
                if present { model.remove(at: at) }
            }
            if step % 97 == 0 {
                let problems = order.invariantViolations()
                #expect(problems == [], "seed \(seed) step \(step)")
                if !problems.isEmpty { return }
            }
            #expect(order.count == model.count)
            let probe = Self.key(Int.random(in: 0..<30_000, using: &rng))
            #expect(order.rank(of: probe) == (0..<model.count).partitionPoint { !model[$0].sortsBefore(probe) }, "seed \(seed) step \(step): rank")
            #expect(order.contains(probe) == model.contains(probe))
            let rank = Int.random(in: -1...model.count, using: &rng)
            #expect(order.key(at: rank) == (model.indices.contains(rank) ? model[rank] : nil), "seed \(seed) step \(step): key(at: \(rank))")
        }
        var walked: [[UInt8]] = []
        let from = model.count / 3
        order.forEachKey(from: from) { walked.append(Array($0)); return true }
        #expect(walked == Array(model[from...]), "seed \(seed): walk")
        // Emptied, it is a root leaf again.
        for key in model { order.remove(key) }
        #expect(order.count == 0 && order.root.isLeaf && order.invariantViolations() == [])
    }
}
