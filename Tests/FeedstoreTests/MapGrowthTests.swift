@testable import Feedstore
import FeedstoreTestSupport
import Foundation
import Testing

@Suite struct MapGrowthTests {
    static func note(_ i: Int) -> Note {
        Note(id: "note\(i)", body: "body\(i)", priority: Int8(i % 7), when: Date(timeIntervalSinceReferenceDate: Double(i)), labels: [String(repeating: "b", count: 2_000)])
    }

    @Test func theMapGrowsFromTinyToWellPastIt() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Note.self],
                                  options: StoreOptions(durability: .none, initialMapSize: 256 << 10))
            let start = try store.core.environment.info().mapSize
            for batch in 0..<40 {
                try store.write { tx in for i in 0..<250 { try tx.put(Self.note(batch * 250 + i)) } }
            }
            let end = try store.core.environment.info().mapSize
            #expect(end > 64 * start, "map \(start) → \(end)")
            #expect(try store.read { try $0.count(Note.self) } == 10_000)
            #expect(try store.read { try $0.get(Note.self, id: "note9999") } != nil)
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func aMaximumMapSizeIsATypedErrorAndEarlierDataStays() throws {
        try withTemporaryDirectory { dir in
            let store = try Store(path: dir + "/s", entities: [Note.self],
                                  options: StoreOptions(durability: .none, initialMapSize: 256 << 10, maximumMapSize: 2 << 20))
            try store.write { tx in for i in 0..<100 { try tx.put(Self.note(i)) } }
            #expect {
                try store.write { tx in for i in 100..<5_000 { try tx.put(Self.note(i)) } }
            } throws: { error in
                if case FeedstoreError.mapFull(_, let limit) = error { return limit == 2 << 20 }
                return false
            }
            #expect(try store.read { try $0.count(Note.self) } == 100)
            #expect(try store.verify().isEmpty)
            // The store still takes writes that fit.
            try store.write { tx in try tx.put(Self.note(100)) }
            #expect(try store.read { try $0.count(Note.self) } == 101)
        }
    }
}
