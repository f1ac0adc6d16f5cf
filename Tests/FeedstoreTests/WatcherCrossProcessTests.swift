@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import Foundation
import Testing

/// Commits made by another process are delivered like local ones, quickly.
@Suite struct WatcherCrossProcessTests {
    @Test(arguments: [WatchOptions(), WatchOptions(sectionBy: 1)])
    func anotherProcessesCommitsAreDeliveredWithinMilliseconds(options: WatchOptions) async throws {
        try await withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try Store(path: path, entities: DemoFeed.entities, options: StoreOptions(durability: .none))
            var feed = DemoFeed(seed: 21)
            try feed.populate(store, messages: 1_000, contacts: 20)
            let query = Query(Message.self, index: "byFolderDate")
            let watcher = store.watch(query, options: options)
            // When each batch arrived, by the sequence it reaches.
            let arrivals = Protected<[(sequence: UInt64, at: Date)]>([])
            let reader = Task { () -> SectionedMirror<Message> in
                var mirror = SectionedMirror<Message>()
                for try await batch in watcher {
                    try mirror.apply(batch)
                    arrivals.withLock { $0.append((batch.toSequence, Date())) }
                }
                return mirror
            }
            // The child prints `committed N` right after each commit; note when each line came.
            let committed = Protected<[UInt64: Date]>([:])
            let child = Process()
            child.executableURL = storectlURL
            child.arguments = ["demo", "mutate", path, "--commits", "60", "--per-commit", "2", "--seed", "9", "--durability", "relaxed"]
            let pipe = Pipe()
            child.standardOutput = pipe
            let buffer = Protected("")
            pipe.fileHandleForReading.readabilityHandler = { handle in
                let text = String(decoding: handle.availableData, as: UTF8.self)
                let now = Date()
                buffer.withLock { pending in
                    pending += text
                    while let newline = pending.firstIndex(of: "\n") {
                        let line = pending[..<newline]
                        if let n = line.split(separator: " ").last.flatMap({ UInt64($0) }) { committed.withLock { $0[n] = now } }
                        pending = String(pending[pending.index(after: newline)...])
                    }
                }
            }
            try child.run()
            while child.isRunning { try await Task.sleep(for: .milliseconds(5)) }
            #expect(child.terminationStatus == 0)
            let head = try store.read { try $0.journalBounds().last }
            let deadline = Date().addingTimeInterval(10)
            while watcher.sequence < head && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
            pipe.fileHandleForReading.readabilityHandler = nil
            watcher.cancel()
            let mirror = try await reader.value
            let c = WatcherContractTests.Configuration(name: "", query: query, options: options)
            try WatcherContractTests.check(mirror, store, c, "cross-process")

            // Latency: from the child's commit line to the first batch reaching that commit.
            let seen = arrivals.current
            let latencies = committed.current.compactMap { sequence, at -> Double? in
                seen.first { $0.sequence >= sequence }.map { max(0, $0.at.timeIntervalSince(at)) }
            }.sorted()
            #expect(latencies.count > 40, "\(latencies.count) commits matched")
            let median = latencies.isEmpty ? .infinity : latencies[latencies.count / 2]
            print("cross-process delivery: median \(Int(median * 1_000)) ms, max \(Int((latencies.last ?? 0) * 1_000)) ms over \(latencies.count) commits")
            #expect(median < 0.05, "median delivery \(median) s")
        }
    }
}
