@testable import Feedstore
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

@Suite(.blocking) struct MapGrowthTests {
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

    /// The map grows from 256 KB to tens of megabytes while reader threads query without pause, an
    /// indexes-only watcher holds its snapshot, and another process follows every commit: no
    /// reader sees an error or a count going backwards, and everything verifies at the end.
    @Test func theMapGrowsUnderConcurrentReadersAndAnotherProcess() throws {
        try withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try Store(path: path, entities: [Note.self], options: StoreOptions(durability: .none, initialMapSize: 256 << 10))
            try store.write { tx in try tx.put(Self.note(0)) }
            let batches = 24
            let follower = try RunningTool(storectlURL, ["watch", path, "--entity", "Note", "--index", "byPriority", "--mode", "indexes",
                                                         "--jsonl", "--until-sequence", String(batches + 1)])
            let watcher = store.watchIndexes(Query(Note.self, index: "byPriority"))
            _ = try watcher.poll()
            let stop = Protected(false)
            let problems = Protected<[String]>([])
            let readers = (0..<3).map { r in
                Thread {
                    var lastCount = 0
                    while !stop.current {
                        do {
                            let (count, page) = try store.read { tx in
                                (try tx.count(Note.self), try tx.query(Note.self, index: "byPriority", offset: 0, limit: 20))
                            }
                            if count < lastCount { problems.withLock { $0.append("reader \(r): count went from \(lastCount) to \(count)") } }
                            if page.isEmpty { problems.withLock { $0.append("reader \(r): an empty page") } }
                            lastCount = count
                        } catch {
                            problems.withLock { $0.append("reader \(r): \(error)") }
                        }
                        usleep(200)  // leave the writer some of the two cores
                    }
                }
            }
            readers.forEach { $0.start() }
            let start = try store.core.environment.info().mapSize
            for batch in 0..<batches {
                try store.write { tx in for i in 1...250 { try tx.put(Self.note(batch * 250 + i)) } }
                _ = try watcher.poll()
            }
            stop.withLock { $0 = true }
            while readers.contains(where: { !$0.isFinished }) { usleep(5_000) }
            let end = try store.core.environment.info().mapSize
            #expect(end > 16 * start, "map \(start) → \(end)")
            #expect(problems.current.isEmpty, "\(problems.current.prefix(5))")
            // The watcher followed through the growth (its pinned snapshots were released and reset).
            #expect(watcher.sequence == UInt64(batches + 1))
            #expect(watcher.numberOfSections == 1 && watcher.numberOfObjects(inSection: 0) == batches * 250 + 1)
            let followed = follower.finish(timeout: 60)
            #expect(followed.status == 0, "\(followed.stderr)")
            #expect(!followed.stdout.isEmpty)
            #expect(try store.verify().isEmpty)
        }
    }
}
