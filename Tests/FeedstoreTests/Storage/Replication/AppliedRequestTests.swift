@_spi(Replication) import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// The applied requests a primary remembers: random remembering, with random bounds and times,
/// keeps the structure whole (checked after every step), within its count bound, forgets the
/// oldest first, and answers for what it keeps.
@Suite(.blocking) struct AppliedRequestTests {
    @Test(arguments: testSeeds(3, base: 61))
    func rememberingKeepsTheStructureWholeAndWithinItsBounds(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/store", options: StoreOptions(durability: .none))
            defer { store.close() }
            let limit = Int.random(in: 5...40, using: &rng)
            let start = Date(timeIntervalSince1970: 1_000_000)
            var model: [(id: String, sequence: UInt64, time: Date)] = []
            var sequence: UInt64 = 0
            for step in 0..<400 {
                sequence += UInt64.random(in: 0...2, using: &rng)
                let time = start.addingTimeInterval(Double(step))
                // Now and then a long age bound forgets nothing by age; else the last 30 steps are kept.
                let oldest = Bool.random(using: &rng) ? start : time.addingTimeInterval(-30)
                // Sometimes an id again: it stays as it was.
                let id = step > 0 && Int.random(in: 0..<10, using: &rng) == 0 ? model.randomElement(using: &rng)?.id ?? String(format: "r%04d", step) : String(format: "r%04d", step)
                try store.write { tx in
                    try tx.rememberRequest(AppliedRequest(id: id, sequence: sequence, time: time), keepingAtMost: limit, since: oldest)
                }
                if !model.contains(where: { $0.id == id }) { model.append((id, sequence, time)) }
                let (problems, count, kept) = try store.read { tx in
                    (try tx.appliedRequestProblems(), try tx.appliedRequestCount(), try model.filter { try tx.appliedRequest($0.id) != nil })
                }
                #expect(problems.isEmpty, "step \(step): \(problems), seed \(seed)")
                #expect(count <= limit, "step \(step): \(count) remembered for at most \(limit), seed \(seed)")
                // Forgotten oldest first: what is kept is a suffix of what was remembered.
                #expect(kept.map(\.id) == model.suffix(kept.count).map(\.id), "step \(step), seed \(seed)")
                model = Array(model.suffix(kept.count))
                if let last = model.last {
                    let answer = try store.read { try $0.appliedRequest(last.id) }
                    #expect(answer?.sequence == last.sequence, "step \(step), seed \(seed)")
                }
            }
        }
    }
}
