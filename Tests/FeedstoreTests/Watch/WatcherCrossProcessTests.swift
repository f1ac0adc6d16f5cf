@testable import Feedstore
import FeedstoreDemo
import FeedstoreTestSupport
import FeedstoreTestTraits
import Foundation
import Testing

/// Commits made by another process are delivered like local ones, quickly.
@Suite(.blocking) struct WatcherCrossProcessTests {
    /// All messages (plain and sectioned), the unread partial index and the same condition as a
    /// filter chosen at run time (with a text test), where another process's read/unread flips
    /// make existing messages newly enter the query and others leave it.
    static let cases: [(index: String, filter: IndexCondition?, options: WatchOptions)] = [
        ("byFolderDate", nil, WatchOptions()),
        ("byFolderDate", nil, WatchOptions(sectionBy: 1)),
        ("unreadByDate", nil, WatchOptions()),
        ("byFolderDate", .field("isRead") == false && .field("title").contains("E", caseInsensitive: true), WatchOptions(sectionBy: 1)),
    ]

    @Test(arguments: cases.indices)
    func anotherProcessesCommitsAreDeliveredWithinMilliseconds(caseIndex: Int) async throws {
        let (index, filter, options) = Self.cases[caseIndex]
        try await withTemporaryDirectory { dir in
            let path = dir + "/s"
            let store = try populatedDemoStore(at: path, seed: 21, messages: 1_000, contacts: 20)
            let query = Query(Message.self, index: index, filter: filter)
            let watcher = store.watch(query, options: options)
            // The watcher runs on its own thread (blocking `next`), so the measurement does not
            // depend on how busy Swift concurrency's shared threads are with other tests.
            let arrivals = Protected<[(sequence: UInt64, at: Date)]>([])
            let entered = Protected(Set<UInt64>()), left = Protected(Set<UInt64>())
            let mirrorBox = Protected(SectionedMirror<Message>())
            let failure = Protected<(any Error)?>(nil)
            let finished = DispatchSemaphore(value: 0)
            let thread = Thread {
                do {
                    while !watcher.isCancelled {
                        guard let batch = try watcher.next(timeout: 2) else { continue }
                        try mirrorBox.withLock { try $0.apply(batch) }
                        if !batch.isInitial {
                            entered.withLock { $0.formUnion(batch.inserts.map(\.id)) }
                            left.withLock { $0.formUnion(batch.deletes.map(\.id)) }
                        }
                        arrivals.withLock { $0.append((batch.toSequence, Date())) }
                    }
                } catch {
                    failure.withLock { $0 = error }
                }
                finished.signal()
            }
            thread.start()
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
            let head = try await store.read { try $0.journalBounds().last }
            let deadline = Date().addingTimeInterval(10)
            while watcher.sequence < head && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
            pipe.fileHandleForReading.readabilityHandler = nil
            watcher.cancel()
            finished.wait()
            if let error = failure.current { throw error }
            let mirror = mirrorBox.current
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
            // Measured alone, the median is a few milliseconds (README). Here other tests share
            // the two cores with the child and the watcher thread, so the bound is generous: it
            // catches a broken wake-up (which would wait out the 2 s timeout), not noise.
            #expect(median < 0.25, "median delivery \(median) s")
            if index == "unreadByDate" || filter != nil {
                // Messages saved before the child ran (ids up to 1,000) that entered the unread
                // index, or the filtered list, through the child's read/unread flips; and left it.
                #expect(entered.current.contains { $0 <= 1_000 }, "no existing message newly entered the query")
                #expect(left.current.contains { $0 <= 1_000 }, "no existing message left the query")
            }
        }
    }
}
